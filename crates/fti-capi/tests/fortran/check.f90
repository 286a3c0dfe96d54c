! The checks of FTI 1.1's Fortran test program (test/local/check.f90), written the way programs
! for FTI 1.1's module are: `use MPI` and `use FTI`, a local integer named FTI_COMM_WORLD that
! FTI_Init replaces, pointers to protect, FTI_Status before the protects, GNU GETARG / SLEEP /
! EXIT, MPI_INT in a Fortran reduction.
!
!   check CONFIG CRASH LEVEL DIFFSIZE      (CRASH, DIFFSIZE: 0 or 1; LEVEL: 1 to 4)
!
! First run (FTI_Status 0): A = 1, B random; B is also written to chk/check-<rank>.tst; one
! FTI_Checkpoint at LEVEL; with CRASH = 1 rank 0 then exits with 10 (no FTI_Finalize). A run
! after it (FTI_Status 1, or 2 for a kept L4 checkpoint) recovers A, B and the size, reads the
! file back and checks that A * B equals it element by element on every rank: rank 0 prints
! [SUCCESSFUL] and every rank exits with 0, else 20 (recovery failed) or 30 (data differ).
module check_support
  implicit none
  integer, parameter :: BASE = 1000

contains

  character(len=64) function data_file(rank)
    integer, intent(IN) :: rank
    write(data_file, '(a,i5.5,a)') 'chk/check-', rank, '.tst'
  end function data_file

  subroutine save_data(b, n, rank)
    real, intent(IN) :: b(:)
    integer(8), intent(IN) :: n
    integer, intent(IN) :: rank
    integer :: u
    open(newunit=u, file=trim(data_file(rank)), access='stream', form='unformatted', &
         status='replace', action='write')
    write(u) n, b
    close(u)
  end subroutine save_data

  !> 0 when the file holds n values (read into b), else -1.
  integer function load_data(b, n, rank) result(res)
    real, intent(OUT) :: b(:)
    integer(8), intent(IN) :: n
    integer, intent(IN) :: rank
    integer(8) :: stored
    integer :: u
    open(newunit=u, file=trim(data_file(rank)), access='stream', form='unformatted', &
         status='old', action='read')
    read(u) stored
    res = 0
    if (stored /= n) then
      write(*, '(a,i5.5,a)') '[ERROR -', rank, '] : wrong dimension'
      res = -1
    else
      read(u) b
    end if
    close(u)
  end function load_data

end module check_support

program check
  use MPI
  use FTI
  use check_support
  implicit none

  integer, parameter :: INIT = 0, RESTART = 1, KEEP = 2
  integer, parameter :: CRASHED = 10, RECOVERY_FAILED = 20, DATA_CORRUPT = 30
  integer, target :: FTI_COMM_WORLD
  character(len=256) :: config
  character(len=1) :: arg
  integer :: crash, level, diff, state, rank, ierr, invalid, total, i
  real, allocatable, target :: a(:), b(:)
  real, allocatable :: expected(:)
  integer(8), target :: asize
  real, pointer :: a_ptr(:), b_ptr(:)
  integer(8), pointer :: asize_ptr
  integer, allocatable :: seed(:)
  integer :: seed_size, clock(8)

  call getarg(1, config)
  call getarg(2, arg)
  read(arg, '(i1)') crash
  call getarg(3, arg)
  read(arg, '(i1)') level
  call getarg(4, arg)
  read(arg, '(i1)') diff

  call MPI_Init(ierr)
  FTI_COMM_WORLD = MPI_COMM_WORLD
  call FTI_Init(config, FTI_COMM_WORLD, ierr)
  call MPI_Comm_rank(FTI_COMM_WORLD, rank, ierr)

  asize = BASE
  if (diff == 1) asize = (mod(rank, 7) + 1) * BASE
  allocate(a(asize), b(asize))
  a_ptr => a
  b_ptr => b
  asize_ptr => asize

  call FTI_Status(state)
  call FTI_Protect(0, a_ptr, ierr)
  call FTI_Protect(1, b_ptr, ierr)
  call FTI_Protect(2, asize_ptr, ierr)

  if (state == INIT) then
    a = 1.0
    call date_and_time(values=clock)
    call random_seed(size=seed_size)
    allocate(seed(seed_size))
    seed = clock(8) + 37 * rank + 1
    call random_seed(put=seed)
    call random_number(b)
    call save_data(b, asize, rank)
    call MPI_Barrier(FTI_COMM_WORLD, ierr)
    call FTI_Checkpoint(1, level, ierr)
    call sleep(1)
    if (crash == 1 .and. rank == 0) call exit(CRASHED)
  else
    call FTI_Recover(ierr)
    if (ierr /= 0) call exit(RECOVERY_FAILED)
    allocate(expected(asize))
    ierr = load_data(expected, asize, rank)
    call MPI_Barrier(FTI_COMM_WORLD, ierr)
    if (ierr /= 0) call exit(DATA_CORRUPT)
  end if

  a = a * b

  invalid = 0
  if (state == RESTART .or. state == KEEP) then
    do i = 1, int(asize)
      if (a(i) /= expected(i)) then
        invalid = -1
        exit
      end if
    end do
    call MPI_Allreduce(invalid, total, 1, MPI_INT, MPI_SUM, FTI_COMM_WORLD, ierr)
    invalid = total
    if (rank == 0) then
      if (invalid == 0) then
        print *, '[SUCCESSFUL]'
      else
        print *, '[NOT SUCCESSFUL]'
      end if
    end if
  end if

  call MPI_Barrier(FTI_COMM_WORLD, ierr)
  call FTI_Finalize(ierr)
  call MPI_Finalize(ierr)
  if (invalid /= 0) call exit(DATA_CORRUPT)
  call exit(0)
end program check
