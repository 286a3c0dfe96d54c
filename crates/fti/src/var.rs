//! Protected variables: plain-old-data seen as bytes, without `unsafe` for users.

use bytemuck::Pod;

/// A protected variable for one call: its FTI id and its bytes. Build one per variable, in
/// protect order, with [`Var::new`] (a scalar or struct) or [`Var::slice`] (a slice or `Vec`):
///
/// ```
/// # let (mut i, mut grid) = (0u32, vec![0.0f64; 16]);
/// let vars = [fti::Var::new(0, &mut i), fti::Var::slice(1, &mut grid)];
/// # drop(vars);
/// ```
///
/// FTI-FF stores no types: only ids, protect order and byte sizes are checked on recovery.
#[derive(Debug)]
pub struct Var<'a> {
    pub(crate) id: i32,
    pub(crate) bytes: &'a mut [u8],
}

impl<'a> Var<'a> {
    /// A scalar or a `#[repr(C)]` plain-old-data struct.
    pub fn new<T: Pod>(id: i32, value: &'a mut T) -> Self {
        Var {
            id,
            bytes: bytemuck::bytes_of_mut(value),
        }
    }

    /// A slice of plain-old-data elements (a `Vec<T>` derefs to one). To recover into a
    /// `Vec` whose length must change, resize it first to [`crate::Fti::stored_size`].
    pub fn slice<T: Pod>(id: i32, values: &'a mut [T]) -> Self {
        Var {
            id,
            bytes: bytemuck::cast_slice_mut(values),
        }
    }

    /// Raw bytes.
    pub fn bytes(id: i32, bytes: &'a mut [u8]) -> Self {
        Var { id, bytes }
    }

    /// The variable's id.
    pub fn id(&self) -> i32 {
        self.id
    }

    /// Its current size in bytes.
    pub fn size(&self) -> u64 {
        self.bytes.len() as u64
    }
}
