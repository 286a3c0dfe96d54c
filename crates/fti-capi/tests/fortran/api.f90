! The routines of module FTI on one rank: the generic FTI_Protect over types, kinds and ranks
! 0 to 7, the c_ptr form with FTI_InitType, complex types, FTI_GetStoredSize, FTI_Realloc and
! FTI_RecoverVar, across a crash and a restart.
!
!   api CONFIG [nrec]
!
! First run: sets every dataset, checkpoints at L1, overwrites them and exits with 10 (no
! FTI_Finalize). Second run with the same config (FTI_Status 1): recovers and checks every
! value; prints "api: all checks passed" and exits with 0, else names the first failure.
! With `nrec` the config asks for a restart that has nothing to recover: FTI_Init returns -2
! and the run goes on afresh, with the type handles usable.
module api_support
  use iso_c_binding
  implicit none
  private
  public :: particle, c_malloc, expect, failures

  !> A derived type protected through the c_ptr form of FTI_Protect.
  type :: particle
    real(8) :: x, v
    integer(4) :: tag, pad
  end type particle

  interface
    type(c_ptr) function c_malloc(n) bind(C, name='malloc')
      import :: c_ptr, c_size_t
      integer(c_size_t), value :: n
    end function c_malloc
  end interface

  integer :: failures = 0

contains

  subroutine expect(ok, what)
    logical, intent(IN) :: ok
    character(len=*), intent(IN) :: what
    if (.not. ok) then
      write(*, '(a)') 'api: FAILED: ' // what
      failures = failures + 1
    end if
  end subroutine expect

end module api_support

program api
  use FTI
  use mpi
  use iso_c_binding
  use api_support
  implicit none

  integer :: comm, ierr, err, status, i, stored, restarted
  character(len=256) :: config, mode
  ! Rank 0 of several types and kinds.
  integer(1), pointer :: i1
  integer(2), pointer :: i2
  integer(8), pointer :: i8
  real(4), pointer :: r4
  logical(4), pointer :: l4
  complex(8), pointer :: z8
  character(kind=1), pointer :: ch
  ! Ranks 1 to 7.
  real(8), pointer :: d1(:), d2(:,:), d3(:,:,:), d4(:,:,:,:), d5(:,:,:,:,:)
  integer(4), pointer :: n6(:,:,:,:,:,:), n7(:,:,:,:,:,:,:)
  complex(4), pointer :: c2(:,:)
  logical(1), pointer :: flags(:)
  real(8), pointer :: strided(:), unset(:)
  ! The c_ptr form: a derived type, and memory from malloc for FTI_Realloc.
  type(particle), allocatable, target :: parts(:)
  type(FTI_type) :: particle_type, pair_def, pair_type, empty
  type(c_ptr) :: raw
  integer(4), pointer :: raw_values(:)
  real(8), target :: pair(2)

  call get_command_argument(1, config)
  call get_command_argument(2, mode)
  call MPI_Init(ierr)
  comm = MPI_COMM_WORLD
  call FTI_Init(config, comm, err)
  if (mode == 'nrec') then
    call expect(err == -2, 'FTI_Init returns FTI_NREC')
    allocate(d1(5))
    d1 = 1.0d0
    call FTI_Protect(11, d1, err)
    call expect(err == FTI_SCES, 'FTI_Protect after FTI_NREC')
    call FTI_Checkpoint(1, 1, err)
    call expect(err == 1, 'FTI_Checkpoint after FTI_NREC')
    call FTI_Finalize(err)
    call MPI_Finalize(ierr)
    if (failures /= 0) call exit(1)
    write(*, '(a)') 'api: FTI_NREC checks passed'
    call exit(0)
  end if
  call expect(err == FTI_SCES, 'FTI_Init')
  call FTI_Status(status)
  restarted = status

  allocate(i1, i2, i8, r4, l4, z8, ch)
  allocate(d1(5), d2(3,4), d3(2,3,4), d4(2,2,2,3), d5(2,2,2,2,2), n6(2,1,2,1,2,3))
  allocate(n7(1,2,1,2,1,2,2), c2(0:2,-1:1), flags(9), parts(3))

  call FTI_Protect(1, i1, err)
  call expect(err == FTI_SCES, 'FTI_Protect INTEGER1 rank 0')
  call FTI_Protect(2, i2, err)
  call FTI_Protect(3, i8, err)
  call FTI_Protect(4, r4, err)
  call FTI_Protect(5, l4, err)
  call FTI_Protect(6, z8, err)
  call FTI_Protect(7, ch, err)
  call FTI_Protect(11, d1, err)
  call FTI_Protect(12, d2, err)
  call FTI_Protect(13, d3, err)
  call FTI_Protect(14, d4, err)
  call FTI_Protect(15, d5, err)
  call FTI_Protect(16, n6, err)
  call FTI_Protect(17, n7, err)
  call expect(err == FTI_SCES, 'FTI_Protect INTEGER4 rank 7')
  call FTI_Protect(18, c2, err)
  call FTI_Protect(19, flags, err)

  ! A derived type through FTI_InitType and the c_ptr form.
  call FTI_InitType(particle_type, int(storage_size(parts(1)) / 8), err)
  call expect(err == FTI_SCES, 'FTI_InitType')
  call FTI_Protect(20, c_loc(parts(1)), size(parts), particle_type, err)
  call expect(err == FTI_SCES, 'FTI_Protect c_ptr')

  ! Memory from malloc, resized by FTI_Realloc on the restart.
  if (restarted == 0) then
    raw = c_malloc(int(4 * 6, c_size_t))
    call c_f_pointer(raw, raw_values, [6])
    raw_values = [(100 + i, i = 1, 6)]
  else
    raw = c_malloc(int(4, c_size_t))
  end if
  call FTI_Protect(21, raw, merge(6, 1, restarted == 0), FTI_INTEGER4, err)
  call expect(err == FTI_SCES, 'FTI_Protect malloc memory')

  ! A complex type built field by field (recorded; the files store bytes).
  call FTI_AddSimpleField(pair_def, FTI_REAL8, 0, 0, 'first')
  call FTI_AddComplexField(pair_def, FTI_REAL8, 8, 1, [1], 1, 'second')
  call FTI_InitComplexType(pair_type, pair_def, 2, 16, 'pair', err)
  call expect(err == FTI_SCES, 'FTI_InitComplexType')
  call FTI_Protect(22, c_loc(pair), 1, pair_type, err)
  call expect(err == FTI_SCES, 'FTI_Protect complex type')
  call FTI_InitComplexType(pair_type, empty, 2, 16, 'no fields', err)
  call expect(err == FTI_NSCS, 'FTI_InitComplexType without fields is refused')
  call FTI_InitComplexType(pair_type, pair_def, 2, 16, 'pair', err)

  ! Refused before reaching memory: an unassociated pointer, a strided section.
  nullify(unset)
  call FTI_Protect(30, unset, err)
  call expect(err == FTI_NSCS, 'FTI_Protect of an unassociated pointer is refused')
  strided => d1(1:5:2)
  call FTI_Protect(31, strided, err)
  call expect(err == FTI_NSCS, 'FTI_Protect of a strided section is refused')

  if (restarted == 0) then
    call set_values()
    call FTI_Checkpoint(1, 1, err)
    call expect(err == 1, 'FTI_Checkpoint returns FTI_DONE')
    call FTI_GetStoredSize(11, stored)
    call expect(stored == 5 * 8, 'FTI_GetStoredSize after a checkpoint')
    call scramble()
    if (failures == 0) write(*, '(a)') 'api: checkpointed, crashing'
    flush(6)
    call exit(10)
  end if

  ! The restart: resize the malloc memory, recover one variable, then all.
  call FTI_GetStoredSize(21, stored)
  call expect(stored == 4 * 6, 'FTI_GetStoredSize of the restart')
  call FTI_Realloc(21, raw, ierr)
  call expect(ierr == 0, 'FTI_Realloc')
  call FTI_RecoverVar(12, err)
  call expect(err == FTI_SCES, 'FTI_RecoverVar')
  call expect(d2(3,4) == 34.0d0, 'FTI_RecoverVar restores the variable')
  call FTI_Recover(err)
  call expect(err == FTI_SCES, 'FTI_Recover')
  call c_f_pointer(raw, raw_values, [6])
  call check_values()
  call FTI_Finalize(err)
  call expect(err == FTI_SCES, 'FTI_Finalize')
  call MPI_Finalize(ierr)
  if (failures /= 0) call exit(1)
  write(*, '(a)') 'api: all checks passed'

contains

  subroutine set_values()
    integer :: j, k
    i1 = -7
    i2 = 1234
    i8 = 9000000000_8
    r4 = 2.5
    l4 = .true.
    z8 = (1.5d0, -2.5d0)
    ch = 'Q'
    d1 = [(real(k, 8), k = 1, 5)]
    do k = 1, 4
      d2(:,k) = [(real(10 * j + k, 8), j = 1, 3)]
    end do
    d3 = reshape([(real(k, 8) / 8, k = 1, 24)], shape(d3))
    d4 = -1.25d0
    d5 = 3.0d0
    n6 = reshape([(k, k = 1, size(n6))], shape(n6))
    n7 = reshape([(-k, k = 1, size(n7))], shape(n7))
    c2 = (0.5, 0.25)
    flags = [(mod(k, 2) == 0, k = 1, 9)]
    parts = [particle(1.0d0, -1.0d0, 7, 0), particle(2.0d0, -2.0d0, 8, 0), &
             particle(3.0d0, -3.0d0, 9, 0)]
    pair = [4.0d0, 5.0d0]
  end subroutine set_values

  subroutine scramble()
    i1 = 0
    i2 = 0
    i8 = 0
    r4 = 0
    l4 = .false.
    z8 = 0
    ch = ' '
    d1 = 0
    d2 = 0
    d3 = 0
    d4 = 0
    d5 = 0
    n6 = 0
    n7 = 0
    c2 = 0
    flags = .false.
    parts%tag = 0
    pair = 0
  end subroutine scramble

  subroutine check_values()
    integer :: k
    call expect(i1 == -7, 'INTEGER1')
    call expect(i2 == 1234, 'INTEGER2')
    call expect(i8 == 9000000000_8, 'INTEGER8')
    call expect(r4 == 2.5, 'REAL4')
    call expect(l4, 'LOGICAL4')
    call expect(z8 == (1.5d0, -2.5d0), 'COMPLEX8')
    call expect(ch == 'Q', 'CHARACTER1')
    call expect(all(d1 == [(real(k, 8), k = 1, 5)]), 'REAL8 rank 1')
    call expect(d2(1,1) == 11.0d0 .and. d2(3,4) == 34.0d0, 'REAL8 rank 2')
    call expect(all(d3 == reshape([(real(k, 8) / 8, k = 1, 24)], shape(d3))), 'REAL8 rank 3')
    call expect(all(d4 == -1.25d0), 'REAL8 rank 4')
    call expect(all(d5 == 3.0d0), 'REAL8 rank 5')
    call expect(all(n6 == reshape([(k, k = 1, size(n6))], shape(n6))), 'INTEGER4 rank 6')
    call expect(all(n7 == reshape([(-k, k = 1, size(n7))], shape(n7))), 'INTEGER4 rank 7')
    call expect(all(c2 == (0.5, 0.25)), 'COMPLEX4 rank 2 with lower bounds')
    call expect(all(flags .eqv. [(mod(k, 2) == 0, k = 1, 9)]), 'LOGICAL1 rank 1')
    call expect(all(parts%tag == [7, 8, 9]) .and. parts(3)%v == -3.0d0, 'derived type')
    call expect(all(raw_values == [(100 + k, k = 1, 6)]), 'FTI_Realloc memory')
    call expect(all(pair == [4.0d0, 5.0d0]), 'complex type')
  end subroutine check_values

end program api
