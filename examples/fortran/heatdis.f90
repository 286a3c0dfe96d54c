! heatdis: the heat-diffusion demo in Fortran, through FTI's Fortran interface (use FTI,
! -lfti_f90 -lfti).
!
! FTI's structure: the iteration counter and the two grids are protected, FTI_Snapshot starts
! every iteration (FTI checkpoints at the [basic] ckpt_lK intervals), and a restarted run calls
! FTI_Recover and resumes at the checkpointed iteration. All communication goes through the
! communicator FTI_Init returns.
!
! Computation: that of fti-rs's demo (docs/runtime.md) and of examples/c/heatdis.c, so the
! final grid is bitwise the one `fti heatdis` computes with the same size and iterations,
! whatever the number of ranks: a size x size grid of doubles, 0.0 everywhere except the first
! row (100.0); each iteration sets every interior cell to 0.25 * (up + down + left + right) of
! the previous grid, borders fixed. Rank r owns size / n consecutive rows (one more for the
! first mod(size, n) ranks) plus a halo row above and below. A row is a column of the Fortran
! array grid(1:size, 0:rows+1), so memory holds the rows one after the other, as in C.
!
!   mpirun -np 4 heatdis [--size N] [--iters N] [--crash-at N] [--delay-us N] [--out FILE] CONFIG
!
! --crash-at N   abort every rank at the first iteration >= N that follows a checkpoint (a real
!                crash: no FTI_Finalize); run again with the same CONFIG to restart
! --delay-us N   sleep N microseconds per iteration (a longer computation, so that FTI's
!                interval-driven checkpoints happen in a short demo)
! --out FILE     rank 0 writes the final grid there (row-major, native doubles)
module heatdis_support
  use iso_c_binding
  use mpi
  implicit none

  interface
    subroutine c_abort() bind(C, name='abort')
    end subroutine c_abort
    integer(c_int) function c_usleep(us) bind(C, name='usleep')
      import :: c_int
      integer(c_int), value :: us
    end function c_usleep
  end interface

contains

  !> Sends the first owned row up and the last one down, and receives the halos.
  subroutine exchange_halos(grid, rows, rank, nprocs, comm)
    real(8), intent(INOUT) :: grid(:,0:)
    integer, intent(IN) :: rows, rank, nprocs, comm
    integer :: up, down, n, ierr

    n = size(grid, 1)
    up = MPI_PROC_NULL
    down = MPI_PROC_NULL
    if (rank > 0) up = rank - 1
    if (rank + 1 < nprocs) down = rank + 1
    call MPI_Sendrecv(grid(:,1), n, MPI_DOUBLE_PRECISION, up, 0, grid(:,rows+1), n, &
                      MPI_DOUBLE_PRECISION, down, 0, comm, MPI_STATUS_IGNORE, ierr)
    call MPI_Sendrecv(grid(:,rows), n, MPI_DOUBLE_PRECISION, down, 1, grid(:,0), n, &
                      MPI_DOUBLE_PRECISION, up, 1, comm, MPI_STATUS_IGNORE, ierr)
  end subroutine exchange_halos

  !> One Jacobi iteration of the owned rows from cur into nxt; the largest change.
  real(8) function step(cur, nxt, first, rows) result(change)
    real(8), intent(IN) :: cur(:,0:)
    real(8), intent(INOUT) :: nxt(:,0:)
    integer, intent(IN) :: first, rows
    integer :: n, k, j

    n = size(cur, 1)
    change = 0.0d0
    do k = 1, rows
      nxt(:,k) = cur(:,k)
      if (first + k - 1 == 0 .or. first + k - 1 == n - 1) cycle
      do j = 2, n - 1
        ! The C and Rust demos' order of additions: ((up + down) + left) + right.
        nxt(j,k) = 0.25d0 * (((cur(j,k-1) + cur(j,k+1)) + cur(j-1,k)) + cur(j+1,k))
        change = max(change, abs(nxt(j,k) - cur(j,k)))
      end do
    end do
  end function step

  !> Rank 0 gathers the owned rows of every rank into file; 0 on success.
  integer function write_grid(file, grid, rows, rank, nprocs, comm) result(rc)
    character(len=*), intent(IN) :: file
    real(8), intent(IN) :: grid(:,0:)
    integer, intent(IN) :: rows, rank, nprocs, comm
    integer, allocatable :: counts(:), displs(:)
    real(8), allocatable :: all(:)
    integer :: n, r, at, u, ierr

    n = size(grid, 1)
    allocate(counts(0:nprocs-1), displs(0:nprocs-1))
    at = 0
    do r = 0, nprocs - 1
      counts(r) = n / nprocs * n
      if (r < mod(n, nprocs)) counts(r) = counts(r) + n
      displs(r) = at
      at = at + counts(r)
    end do
    if (rank == 0) then
      allocate(all(n * n))
    else
      allocate(all(1))
    end if
    call MPI_Gatherv(grid(:,1:rows), rows * n, MPI_DOUBLE_PRECISION, all, counts, displs, &
                     MPI_DOUBLE_PRECISION, 0, comm, ierr)
    rc = 0
    if (rank == 0) then
      open(newunit=u, file=file, access='stream', form='unformatted', status='replace', &
           action='write', iostat=rc)
      if (rc == 0) write(u, iostat=rc) all
      if (rc == 0) close(u, iostat=rc)
      if (rc /= 0) write(0, '(a)') 'heatdis: cannot write ' // trim(file)
    end if
    call MPI_Bcast(rc, 1, MPI_INTEGER, 0, comm, ierr)
  end function write_grid

end module heatdis_support

program heatdis
  use FTI
  use mpi
  use heatdis_support
  implicit none

  integer, parameter :: FTI_DONE = 1
  integer :: n = 512, iters = 3000, crash_at = -1, delay_us = 0
  character(len=:), allocatable :: out, config
  integer :: comm, rank, nprocs, rows, first, err, ierr, status, rc
  integer :: computed, checkpoints, last_checkpoint
  integer, target :: i
  integer, pointer :: iteration
  real(8), pointer :: h(:,:), g(:,:), cur(:,:), nxt(:,:)
  real(8) :: change, largest

  call parse_arguments()
  call MPI_Init(ierr)
  comm = MPI_COMM_WORLD
  call FTI_Init(config, comm, err)   ! comm becomes FTI's application communicator
  if (err == FTI_NSCS) call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  call MPI_Comm_rank(comm, rank, ierr)
  call MPI_Comm_size(comm, nprocs, ierr)
  if (n < nprocs) then
    if (rank == 0) write(0, '(a)') 'heatdis: --size must be at least the number of ranks'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  rows = n / nprocs
  first = rank * rows + min(rank, mod(n, nprocs))
  if (rank < mod(n, nprocs)) rows = rows + 1
  allocate(h(n, 0:rows+1), g(n, 0:rows+1))
  h = 0.0d0
  g = 0.0d0
  if (first == 0) then
    h(:,1) = 100.0d0
    g(:,1) = 100.0d0
  end if

  i = 0
  iteration => i
  call FTI_Protect(0, iteration, err)
  call FTI_Protect(1, h, err)
  call FTI_Protect(2, g, err)
  call FTI_Status(status)
  if (status /= 0) then
    call FTI_Recover(err)
    if (err /= FTI_SCES) call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    if (rank == 0) write(*, '(a,i0)') 'recovered at iteration ', i
  end if

  computed = 0
  checkpoints = 0
  last_checkpoint = -1
  do while (i < iters)
    call FTI_Snapshot(err)
    if (err == FTI_DONE) then
      checkpoints = checkpoints + 1
      last_checkpoint = i
    end if
    if (crash_at >= 0 .and. i >= crash_at .and. last_checkpoint >= 0) then
      if (rank == 0) then
        write(*, '(a,i0,a,i0,a)') 'crashing at iteration ', i, ' (last checkpoint at iteration ', &
            last_checkpoint, ')'
        flush(6)
      end if
      ! Every rank waits for rank 0's line: a launcher that ends the job at the first abort
      ! (MPICH's) would otherwise kill rank 0 before it is written.
      call MPI_Barrier(comm, ierr)
      call c_abort()
    end if
    ! h and g swap roles every iteration: after i iterations the grid is h for even i.
    if (mod(i, 2) == 0) then
      cur => h
      nxt => g
    else
      cur => g
      nxt => h
    end if
    call exchange_halos(cur, rows, rank, nprocs, comm)
    change = step(cur, nxt, first, rows)
    i = i + 1
    computed = computed + 1
    if (mod(i, 500) == 0) then
      call MPI_Allreduce(change, largest, 1, MPI_DOUBLE_PRECISION, MPI_MAX, comm, ierr)
      if (rank == 0) write(*, '(a,i0,a,f0.6)') 'iteration ', i, ': largest change ', largest
    end if
    if (delay_us > 0) rc = c_usleep(int(delay_us, c_int))
  end do
  if (rank == 0) write(*, '(a,i0,a,i0)') 'iterations computed: ', computed, &
      ', checkpoints taken: ', checkpoints

  rc = 0
  if (allocated(out)) then
    if (mod(iters, 2) == 0) then
      rc = write_grid(out, h, rows, rank, nprocs, comm)
    else
      rc = write_grid(out, g, rows, rank, nprocs, comm)
    end if
  end if
  deallocate(h, g)
  call FTI_Finalize(err)
  call MPI_Finalize(ierr)
  if (rc /= 0) error stop 1

contains

  subroutine parse_arguments()
    integer :: k, count
    character(len=:), allocatable :: a

    count = command_argument_count()
    k = 1
    do while (k <= count)
      a = argument(k)
      if (k < count .and. (a == '--size' .or. a == '--iters' .or. a == '--crash-at' .or. &
                           a == '--delay-us' .or. a == '--out')) then
        k = k + 1
        select case (a)
        case ('--size')
          n = number(argument(k))
        case ('--iters')
          iters = number(argument(k))
        case ('--crash-at')
          crash_at = number(argument(k))
        case ('--delay-us')
          delay_us = number(argument(k))
        case ('--out')
          out = argument(k)
        end select
      else if (a(1:1) /= '-' .and. .not. allocated(config)) then
        config = a
      else
        call usage()
      end if
      k = k + 1
    end do
    if (.not. allocated(config) .or. n < 3 .or. iters < 0) call usage()
  end subroutine parse_arguments

  function argument(k) result(a)
    integer, intent(IN) :: k
    character(len=:), allocatable :: a
    integer :: length
    call get_command_argument(k, length=length)
    allocate(character(len=max(length, 1)) :: a)
    call get_command_argument(k, a)
  end function argument

  integer function number(text)
    character(len=*), intent(IN) :: text
    integer :: stat
    read(text, *, iostat=stat) number
    if (stat /= 0) call usage()
  end function number

  subroutine usage()
    write(0, '(a)') 'usage: heatdis [--size N] [--iters N] [--crash-at N] [--delay-us N] ' // &
        '[--out FILE] CONFIG'
    stop 2
  end subroutine usage

end program heatdis
