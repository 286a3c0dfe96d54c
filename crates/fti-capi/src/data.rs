//! Protected datasets: what FTI_Protect registered (id, pointer, element count, type), in
//! protect order, and the runtime's `Var`s built from them for one call.
//!
//! The application's buffers are borrowed only for the duration of a call. Two datasets may
//! share memory in C (one buffer protected under two ids); Rust must not hold two mutable views
//! of the same bytes, so in that case the call works on copies, written back afterwards when it
//! recovers.

use std::ffi::{c_int, c_void};

use fti::Var;

use crate::Failure;

/// One protected dataset.
#[derive(Debug, Clone)]
pub(crate) struct Dataset {
    pub id: c_int,
    pub ptr: *mut c_void,
    pub count: i64,
    pub type_id: c_int,
    pub elem_size: c_int,
    /// FTI_DefineDataset's description (HDF5 only; kept, not written).
    pub rank: c_int,
    pub dims: Vec<c_int>,
    pub name: String,
    pub group: c_int,
}

impl Dataset {
    /// Its size in bytes. FTI_Protect refused negative counts and sizes and checked the product.
    pub(crate) fn size(&self) -> usize {
        (self.count as usize).saturating_mul(self.elem_size as usize)
    }

    /// Where its bytes are: `(address, length)`; a NULL pointer is refused unless it is empty.
    fn span(&self) -> Result<(usize, usize), Failure> {
        let len = self.size();
        if self.ptr.is_null() && len > 0 {
            return Err(Failure::Dataset {
                id: self.id,
                what: format!("its pointer is NULL but it holds {len} bytes"),
            });
        }
        Ok((self.ptr as usize, len))
    }
}

/// A view of `len` bytes at `addr`.
///
/// # Safety
/// `addr` is valid for reads and writes of `len` bytes for `'a`, and nothing else accesses
/// them meanwhile (or `len` is 0).
unsafe fn bytes<'a>(addr: usize, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len) }
}

/// Calls `f` with one `Var` per dataset, in protect order, over the application's buffers.
/// With `write_back` (recovery), bytes that `f` wrote reach the buffers also when datasets
/// overlap; only if `f` succeeds in that case.
///
/// # Safety
/// Every dataset's pointer is valid for reads and writes of its size during the call, and no
/// other thread touches those bytes meanwhile: FTI_Protect's contract, as with FTI.
pub(crate) unsafe fn with_vars<T>(
    datasets: &[Dataset],
    write_back: bool,
    f: impl FnOnce(&mut [Var<'_>]) -> Result<T, Failure>,
) -> Result<T, Failure> {
    let spans = datasets
        .iter()
        .map(Dataset::span)
        .collect::<Result<Vec<_>, _>>()?;
    if !overlapping(&spans) {
        let mut vars: Vec<Var<'_>> = datasets
            .iter()
            .zip(&spans)
            // SAFETY: the caller's contract, and the spans are disjoint.
            .map(|(d, &(addr, len))| Var::bytes(d.id, unsafe { bytes(addr, len) }))
            .collect();
        return f(&mut vars);
    }
    let mut copies: Vec<Vec<u8>> = spans
        .iter()
        // SAFETY: the caller's contract; read only, the copies are ours.
        .map(|&(addr, len)| unsafe { bytes(addr, len) }.to_vec())
        .collect();
    let result = {
        let mut vars: Vec<Var<'_>> = datasets
            .iter()
            .zip(copies.iter_mut())
            .map(|(d, c)| Var::bytes(d.id, c))
            .collect();
        f(&mut vars)?
    };
    if write_back {
        for (&(addr, len), copy) in spans.iter().zip(&copies) {
            // SAFETY: the caller's contract; `copy` is ours, so it cannot overlap the buffer.
            unsafe { std::ptr::copy_nonoverlapping(copy.as_ptr(), addr as *mut u8, len) };
        }
    }
    Ok(result)
}

/// Calls `f` with the `Var` of one dataset.
///
/// # Safety
/// As [`with_vars`], for this dataset.
pub(crate) unsafe fn with_var<T>(
    dataset: &Dataset,
    f: impl FnOnce(&mut Var<'_>) -> Result<T, Failure>,
) -> Result<T, Failure> {
    let (addr, len) = dataset.span()?;
    // SAFETY: the caller's contract.
    let mut var = Var::bytes(dataset.id, unsafe { bytes(addr, len) });
    f(&mut var)
}

/// Whether two non-empty spans share a byte.
fn overlapping(spans: &[(usize, usize)]) -> bool {
    let mut sorted: Vec<(usize, usize)> = spans.iter().copied().filter(|s| s.1 > 0).collect();
    sorted.sort_unstable();
    sorted
        .windows(2)
        .any(|w| w[0].0.saturating_add(w[0].1) > w[1].0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset(id: c_int, ptr: *mut u8, len: usize) -> Dataset {
        Dataset {
            id,
            ptr: ptr.cast(),
            count: len as i64,
            type_id: 0,
            elem_size: 1,
            rank: 1,
            dims: vec![len as c_int],
            name: String::new(),
            group: 0,
        }
    }

    #[test]
    fn spans_overlap_only_when_they_share_a_byte() {
        assert!(!overlapping(&[(0, 4), (4, 4), (100, 0), (8, 1)]));
        assert!(overlapping(&[(0, 5), (4, 4)]));
        assert!(!overlapping(&[(10, 0), (10, 4)]));
    }

    #[test]
    fn overlapping_datasets_work_on_copies_written_back() {
        let mut buf = [0u8; 8];
        let base = buf.as_mut_ptr();
        let ds = [dataset(1, base, 8), dataset(2, base.wrapping_add(4), 4)];
        // SAFETY: both datasets point into `buf`, alive and otherwise untouched here.
        let seen = unsafe {
            with_vars(&ds, true, |vars| {
                assert_eq!((vars[0].size(), vars[1].size()), (8, 4));
                Ok(vars.len())
            })
        };
        assert_eq!(seen.unwrap(), 2);
    }

    #[test]
    fn null_pointer_with_bytes_is_refused() {
        let d = dataset(3, std::ptr::null_mut(), 4);
        // SAFETY: the NULL pointer is refused before any access.
        let err = unsafe { with_vars(&[d], false, |_| Ok(())) }.unwrap_err();
        assert!(err.to_string().contains("NULL"), "{err}");
    }
}
