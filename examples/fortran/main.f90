! A Fortran program calling kgen's sgemm and saxpy through the LLVM backend (kernels.ll from
! `kgen gen -targets llvm -pkg kernels kernels.kdsl`) with bind(C) interfaces, checked against
! Fortran references. Build and run: ./run.sh (in this directory).
!
! kgen tensors are row-major: a C matrix A[M][K] is the Fortran array a(K, M) (column-major), so
! C(i,j) of the kernel is c(j, i) here.
program kgen_example
  use, intrinsic :: iso_c_binding
  implicit none

  interface
    integer(c_int32_t) function kernels_sgemm(m, k, n, a, a_len, b, b_len, c, c_len, alpha, beta) &
        bind(C, name="kernels_sgemm")
      import :: c_int32_t, c_int64_t, c_float
      integer(c_int64_t), value :: m, k, n, a_len, b_len, c_len
      real(c_float), intent(in) :: a(*), b(*)
      real(c_float), intent(inout) :: c(*)
      real(c_float), value :: alpha, beta
    end function

    integer(c_int32_t) function kernels_saxpy(n, x, x_len, y, y_len, alpha) bind(C, name="kernels_saxpy")
      import :: c_int32_t, c_int64_t, c_float
      integer(c_int64_t), value :: n, x_len, y_len
      real(c_float), intent(in) :: x(*)
      real(c_float), intent(inout) :: y(*)
      real(c_float), value :: alpha
    end function
  end interface

  integer :: fails
  fails = 0
  call check_sgemm(1_c_int64_t, 1_c_int64_t, 1_c_int64_t, fails)
  call check_sgemm(7_c_int64_t, 13_c_int64_t, 5_c_int64_t, fails)
  call check_sgemm(61_c_int64_t, 97_c_int64_t, 37_c_int64_t, fails)
  call check_saxpy(1_c_int64_t, fails)
  call check_saxpy(1001_c_int64_t, fails)
  if (fails /= 0) then
    print '(a)', 'FAIL'
    stop 1
  end if
  print '(a)', 'ok: sgemm and saxpy match the Fortran reference'

contains

  subroutine check_sgemm(m, k, n, fails)
    integer(c_int64_t), intent(in) :: m, k, n
    integer, intent(inout) :: fails
    real(c_float), allocatable :: a(:, :), b(:, :), c(:, :), c0(:, :)
    real(c_double) :: want, mag
    real(c_float) :: alpha, beta
    integer(c_int64_t) :: i, j, p
    integer(c_int32_t) :: st
    allocate(a(k, m), b(n, k), c(n, m), c0(n, m))
    call random_number(a)
    call random_number(b)
    call random_number(c0)
    a = a - 0.5
    b = b - 0.5
    c = c0
    alpha = 1.25
    beta = -0.75
    st = kernels_sgemm(m, k, n, a, m*k, b, k*n, c, m*n, alpha, beta)
    if (st /= 0) then
      print '(a, i0)', 'sgemm: status ', st
      fails = fails + 1
      return
    end if
    do i = 1, m
      do j = 1, n
        want = 0
        mag = 0
        do p = 1, k
          want = want + real(a(p, i), c_double) * real(b(j, p), c_double)
          mag = mag + abs(real(a(p, i), c_double) * real(b(j, p), c_double))
        end do
        want = alpha * want + beta * c0(j, i)
        if (abs(c(j, i) - want) > 4 * (k + 2) * 2.0d0**(-24) * (abs(alpha) * mag + abs(beta * c0(j, i)))) then
          print '(a, i0, a, i0, a, g0, a, g0)', 'sgemm C(', i, ',', j, ') = ', c(j, i), ', want ', want
          fails = fails + 1
          return
        end if
      end do
    end do
    ! A wrong length is refused and c is left alone.
    c(1, 1) = 42
    st = kernels_sgemm(m, k, n, a, m*k - 1, b, k*n, c, m*n, alpha, beta)
    if (st /= 2 .or. c(1, 1) /= 42) then
      print '(a)', 'sgemm: a wrong length was not refused'
      fails = fails + 1
    end if
  end subroutine

  subroutine check_saxpy(n, fails)
    integer(c_int64_t), intent(in) :: n
    integer, intent(inout) :: fails
    real(c_float), allocatable :: x(:), y(:), want(:)
    real(c_float) :: alpha
    integer(c_int32_t) :: st
    allocate(x(n), y(n), want(n))
    call random_number(x)
    call random_number(y)
    alpha = -2.5
    want = alpha * x + y
    st = kernels_saxpy(n, x, n, y, n, alpha)
    if (st /= 0) then
      print '(a, i0)', 'saxpy: status ', st
      fails = fails + 1
      return
    end if
    ! One rounding of the product and one of the sum either way, unless the compiler fuses them:
    ! allow two ulps of the operands' scale.
    if (any(abs(y - want) > 4 * epsilon(1.0_c_float) * (abs(alpha * x) + abs(want)))) then
      print '(a)', 'saxpy: results differ from the reference'
      fails = fails + 1
    end if
  end subroutine
end program
