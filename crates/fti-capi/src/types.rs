//! FTI's data types and HDF5 groups as C sees them (`FTIT_type`, `FTIT_complexType`,
//! `FTIT_H5Group`), the eleven predefined type objects, and the functions that describe types and
//! groups.
//!
//! FTI-FF files store bytes, not types: a type only gives a protected dataset its element size,
//! and an id (FTI_BitFlip looks for `FTI_SFLT` and `FTI_DBLE`). Complex types and groups
//! describe HDF5 layouts; as in an FTI build without HDF5 they are validated and recorded, and
//! change nothing in the files.

use std::ffi::{c_char, c_int, c_long, c_short, c_uint, c_ulong, c_ushort, CStr};
use std::mem::size_of;
use std::ptr::{addr_of_mut, null_mut};
use std::sync::{Mutex, PoisonError};

use crate::message;
use crate::{FTI_NSCS, FTI_SCES};

/// `FTI_BUFS`: capacity of FTI's names and tables.
pub const FTI_BUFS: usize = 256;

/// `FTIT_type`: an element type, passed by value to `FTI_Protect` (24 bytes on LP64).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FtiType {
    /// Type id: 0..=10 for the predefined types, then 11, 12, ... in creation order.
    pub id: c_int,
    /// Element size in bytes.
    pub size: c_int,
    /// The structure of a complex type, NULL for a simple one.
    pub structure: *mut ComplexType,
    /// HDF5 group (not used without HDF5).
    pub h5group: *mut H5Group,
}

impl FtiType {
    const ZERO: FtiType = FtiType {
        id: 0,
        size: 0,
        structure: null_mut(),
        h5group: null_mut(),
    };
}

/// `FTIT_typeField`: one field of a complex type (396 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TypeField {
    /// Id of the field's type.
    pub type_id: c_int,
    /// Offset of the field in the structure.
    pub offset: c_int,
    /// Number of dimensions (1..=32).
    pub rank: c_int,
    /// Length of each dimension.
    pub dim_length: [c_int; 32],
    /// Field name (NUL-terminated).
    pub name: [c_char; FTI_BUFS],
}

/// `FTIT_complexType`: the structure of a complex type (101 636 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ComplexType {
    /// Type name (NUL-terminated).
    pub name: [c_char; FTI_BUFS],
    /// Number of fields used.
    pub length: c_int,
    /// The fields, `0..length`.
    pub field: [TypeField; FTI_BUFS],
}

/// `FTIT_H5Group`: an HDF5 group (1 288 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct H5Group {
    /// Group id (0 is the root group "/").
    pub id: c_int,
    /// Group name (NUL-terminated).
    pub name: [c_char; FTI_BUFS],
    /// Number of children.
    pub children_no: c_int,
    /// Ids of the children.
    pub children_id: [c_int; FTI_BUFS],
}

// The layouts fti.h declares (LP64), checked at compile time.
const _: () = assert!(size_of::<FtiType>() == 24);
const _: () = assert!(size_of::<TypeField>() == 396);
const _: () = assert!(size_of::<ComplexType>() == 101_636);
const _: () = assert!(size_of::<H5Group>() == 1_288);

macro_rules! predefined {
    ($($name:ident),* $(,)?) => {
        $(
            #[doc = concat!("`", stringify!($name), "`: a predefined type, all zero until `FTI_Init`.")]
            // SAFETY (of every access): written only by FTI_Init under the session lock; C
            // programs read them after FTI_Init returns, as with FTI.
            #[no_mangle]
            pub static mut $name: FtiType = FtiType::ZERO;
        )*
    };
}

predefined!(
    FTI_CHAR, FTI_SHRT, FTI_INTG, FTI_LONG, FTI_UCHR, FTI_USHT, FTI_UINT, FTI_ULNG, FTI_SFLT,
    FTI_DBLE, FTI_LDBE,
);

/// Id of `FTI_SFLT`.
pub(crate) const SFLT_ID: c_int = 8;
/// Id of `FTI_DBLE`.
pub(crate) const DBLE_ID: c_int = 9;
/// Ids below this one are the predefined types.
const FIRST_USER_TYPE: c_int = 11;

/// `long double` on LP64 Linux (x86-64 and aarch64): 16 bytes.
const LONG_DOUBLE_SIZE: usize = 16;

/// Sets the predefined type objects, in FTI's order and with FTI's ids, and restarts user type
/// ids at 11 and the groups at the root (FTI_Init).
pub(crate) fn init_predefined() {
    let sizes = [
        size_of::<c_char>(),
        size_of::<c_short>(),
        size_of::<c_int>(),
        size_of::<c_long>(),
        size_of::<u8>(),
        size_of::<c_ushort>(),
        size_of::<c_uint>(),
        size_of::<c_ulong>(),
        size_of::<f32>(),
        size_of::<f64>(),
        LONG_DOUBLE_SIZE,
    ];
    let objects = [
        addr_of_mut!(FTI_CHAR),
        addr_of_mut!(FTI_SHRT),
        addr_of_mut!(FTI_INTG),
        addr_of_mut!(FTI_LONG),
        addr_of_mut!(FTI_UCHR),
        addr_of_mut!(FTI_USHT),
        addr_of_mut!(FTI_UINT),
        addr_of_mut!(FTI_ULNG),
        addr_of_mut!(FTI_SFLT),
        addr_of_mut!(FTI_DBLE),
        addr_of_mut!(FTI_LDBE),
    ];
    for (id, (object, size)) in objects.into_iter().zip(sizes).enumerate() {
        let ty = FtiType {
            id: id as c_int,
            size: size as c_int,
            ..FtiType::ZERO
        };
        // SAFETY: a valid static; see `predefined!`.
        unsafe { object.write(ty) };
    }
    let mut reg = registry();
    reg.next_type = FIRST_USER_TYPE;
    reg.groups.clear();
}

/// Type ids and groups, shared by all calls (they need no FTI_Init, as in FTI).
struct Registry {
    next_type: c_int,
    /// Registered groups by id; empty means only the root.
    groups: Vec<Group>,
}

struct Group {
    name: Vec<u8>,
    children: Vec<c_int>,
}

impl Registry {
    fn groups(&mut self) -> &mut Vec<Group> {
        if self.groups.is_empty() {
            self.groups.push(Group {
                name: b"/".to_vec(),
                children: Vec::new(),
            });
        }
        &mut self.groups
    }

    fn new_type_id(&mut self) -> c_int {
        let id = self.next_type;
        self.next_type = self.next_type.saturating_add(1);
        id
    }
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next_type: FIRST_USER_TYPE,
    groups: Vec::new(),
});

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether `id` is a registered group (the root always is).
pub(crate) fn group_exists(id: c_int) -> bool {
    usize::try_from(id).is_ok_and(|i| i < registry().groups().len())
}

/// The bytes of a C string, or `None` for NULL.
///
/// # Safety
/// `s` is NULL or a NUL-terminated string.
unsafe fn c_bytes<'a>(s: *const c_char) -> Option<&'a [u8]> {
    // SAFETY: the caller's contract.
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_bytes())
}

/// Copies `text` into a fixed C name buffer, truncated to leave room for the NUL.
fn set_name(buf: &mut [c_char; FTI_BUFS], text: &[u8]) {
    buf.fill(0);
    for (d, &s) in buf.iter_mut().zip(&text[..text.len().min(FTI_BUFS - 1)]) {
        *d = s as c_char;
    }
}

/// `int FTI_InitType(FTIT_type* type, int size)`: a new simple type of `size` bytes.
///
/// # Safety
/// `ty` is NULL or points to a writable `FTIT_type`.
#[no_mangle]
pub unsafe extern "C" fn FTI_InitType(ty: *mut FtiType, size: c_int) -> c_int {
    // SAFETY: the caller's contract.
    let Some(ty) = (unsafe { ty.as_mut() }) else {
        message::warn("FTI_InitType: the type is NULL");
        return FTI_NSCS;
    };
    ty.id = registry().new_type_id();
    ty.size = size;
    ty.structure = null_mut();
    FTI_SCES
}

/// `int FTI_InitComplexType(FTIT_type*, FTIT_complexType*, int length, size_t size, char* name,
/// FTIT_H5Group*)`: a type of `size` bytes with the structure described by `definition`.
///
/// # Safety
/// `new_type` and `definition` are NULL or point to writable objects of their types; `name` is
/// NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn FTI_InitComplexType(
    new_type: *mut FtiType,
    definition: *mut ComplexType,
    length: c_int,
    size: usize,
    name: *mut c_char,
    _h5group: *mut H5Group,
) -> c_int {
    // SAFETY: the caller's contract.
    let (Some(new_type), Some(def)) =
        (unsafe { new_type.as_mut() }, unsafe { definition.as_mut() })
    else {
        message::warn("FTI_InitComplexType: the type or its definition is NULL");
        return FTI_NSCS;
    };
    if let Err(why) = check_complex(def, length) {
        message::warn(&why);
        return FTI_NSCS;
    }
    let id = registry().new_type_id();
    new_type.id = id;
    // FTI keeps the size as an int.
    new_type.size = size as c_int;
    new_type.structure = definition;
    def.length = length;
    // SAFETY: the caller's contract.
    match unsafe { c_bytes(name) }.filter(|n| !n.is_empty()) {
        Some(n) => set_name(&mut def.name, n),
        None => set_name(&mut def.name, format!("Type{id}").as_bytes()),
    }
    FTI_SCES
}

/// FTI's checks of a complex type: 1..=255 fields, each of rank 1..=32 with positive lengths.
fn check_complex(def: &ComplexType, length: c_int) -> Result<(), String> {
    if length < 1 {
        return Err("Type can't contain less than 1 type.".into());
    }
    if length > 255 {
        return Err("Type can't contain more than 255 types.".into());
    }
    for (i, field) in def.field.iter().take(length as usize).enumerate() {
        if field.rank < 1 {
            return Err(format!("Type rank must be greater than 0 (field {i})."));
        }
        if field.rank > 32 {
            return Err(format!("Maximum rank is 32 (field {i})."));
        }
        if field.dim_length[..field.rank as usize]
            .iter()
            .any(|&d| d < 1)
        {
            return Err(format!(
                "Type dimension length must be greater than 0 (field {i})."
            ));
        }
    }
    Ok(())
}

/// The field `id` of a definition, or `None` (with a warning) when the call cannot fill it.
///
/// # Safety
/// `definition` and `ty` are NULL or valid.
unsafe fn field<'a>(
    what: &str,
    definition: *mut ComplexType,
    ty: *const FtiType,
    id: c_int,
) -> Option<(&'a mut TypeField, c_int)> {
    // SAFETY: the caller's contract.
    let (def, ty) = unsafe { (definition.as_mut(), ty.as_ref()) };
    let slot = usize::try_from(id).ok().filter(|&i| i < FTI_BUFS);
    match (def, ty, slot) {
        (Some(def), Some(ty), Some(i)) => Some((&mut def.field[i], ty.id)),
        _ => {
            message::warn(&format!(
                "{what}: NULL definition or type, or field id {id} outside 0..{FTI_BUFS}"
            ));
            None
        }
    }
}

/// Names a field `name`, or `T<id>` when it is NULL or empty.
///
/// # Safety
/// `name` is NULL or a C string.
unsafe fn name_field(field: &mut TypeField, name: *const c_char, id: c_int) {
    // SAFETY: the caller's contract.
    match unsafe { c_bytes(name) }.filter(|n| !n.is_empty()) {
        Some(n) => set_name(&mut field.name, n),
        None => set_name(&mut field.name, format!("T{id}").as_bytes()),
    }
}

/// `void FTI_AddSimpleField(FTIT_complexType*, FTIT_type*, size_t offset, int id, char* name)`:
/// field `id` is one element of `ty` at `offset`.
///
/// # Safety
/// Pointers are NULL or valid; `name` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn FTI_AddSimpleField(
    definition: *mut ComplexType,
    ty: *mut FtiType,
    offset: usize,
    id: c_int,
    name: *mut c_char,
) {
    // SAFETY: the caller's contract.
    let Some((field, type_id)) = (unsafe { field("FTI_AddSimpleField", definition, ty, id) })
    else {
        return;
    };
    field.type_id = type_id;
    field.offset = offset as c_int;
    field.rank = 1;
    field.dim_length[0] = 1;
    // SAFETY: the caller's contract.
    unsafe { name_field(field, name, id) };
}

/// `void FTI_AddComplexField(FTIT_complexType*, FTIT_type*, size_t offset, int rank,
/// int* dimLength, int id, char* name)`: field `id` is an array of `ty` with `rank` dimensions.
///
/// # Safety
/// Pointers are NULL or valid; `dim_length` holds `rank` ints; `name` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn FTI_AddComplexField(
    definition: *mut ComplexType,
    ty: *mut FtiType,
    offset: usize,
    rank: c_int,
    dim_length: *mut c_int,
    id: c_int,
    name: *mut c_char,
) {
    // SAFETY: the caller's contract.
    let Some((field, type_id)) = (unsafe { field("FTI_AddComplexField", definition, ty, id) })
    else {
        return;
    };
    field.type_id = type_id;
    field.offset = offset as c_int;
    // An out-of-range rank is kept so that FTI_InitComplexType refuses the type; only the
    // dimensions that fit are copied.
    field.rank = rank;
    let n = usize::try_from(rank).unwrap_or(0).min(32);
    if n > 0 && !dim_length.is_null() {
        // SAFETY: the caller's contract: `rank` ints, of which `n` are read.
        let dims = unsafe { std::slice::from_raw_parts(dim_length, n) };
        field.dim_length[..n].copy_from_slice(dims);
    }
    // SAFETY: the caller's contract.
    unsafe { name_field(field, name, id) };
}

/// `int FTI_InitGroup(FTIT_H5Group* h5group, char* name, FTIT_H5Group* parent)`: registers a
/// group under `parent` (NULL: the root).
///
/// # Safety
/// `h5group` is NULL or writable; `parent` is NULL or valid; `name` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn FTI_InitGroup(
    h5group: *mut H5Group,
    name: *mut c_char,
    parent: *mut H5Group,
) -> c_int {
    // SAFETY: the caller's contract.
    let (Some(group), Some(name)) = (unsafe { h5group.as_mut() }, unsafe { c_bytes(name) }) else {
        message::warn("FTI_InitGroup: the group or its name is NULL");
        return FTI_NSCS;
    };
    // SAFETY: the caller's contract.
    let parent_id = unsafe { parent.as_ref() }.map_or(0, |p| p.id);
    let mut reg = registry();
    let groups = reg.groups();
    let Some(parent) = usize::try_from(parent_id)
        .ok()
        .filter(|&p| p < groups.len())
    else {
        message::warn(&format!(
            "FTI_InitGroup: parent group {parent_id} is not registered"
        ));
        return FTI_NSCS;
    };
    let taken = groups[parent]
        .children
        .iter()
        .any(|&c| groups[c as usize].name == name);
    if taken {
        message::warn(&format!(
            "Group {} already has the {} child.",
            String::from_utf8_lossy(&groups[parent].name),
            String::from_utf8_lossy(name)
        ));
        return FTI_NSCS;
    }
    if groups.len() >= FTI_BUFS {
        message::warn(&format!("FTI_InitGroup: at most {FTI_BUFS} groups"));
        return FTI_NSCS;
    }
    let id = groups.len() as c_int;
    groups.push(Group {
        name: name.to_vec(),
        children: Vec::new(),
    });
    groups[parent].children.push(id);
    group.id = id;
    group.children_no = 0;
    set_name(&mut group.name, name);
    FTI_SCES
}

/// `int FTI_RenameGroup(FTIT_H5Group* h5group, char* name)`: renames FTI's registered copy of
/// the group (the caller's object is left alone, as in FTI).
///
/// # Safety
/// `h5group` is NULL or valid; `name` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn FTI_RenameGroup(h5group: *mut H5Group, name: *mut c_char) -> c_int {
    // SAFETY: the caller's contract.
    let (Some(group), Some(name)) = (unsafe { h5group.as_ref() }, unsafe { c_bytes(name) }) else {
        message::warn("FTI_RenameGroup: the group or its name is NULL");
        return FTI_NSCS;
    };
    let mut reg = registry();
    match usize::try_from(group.id)
        .ok()
        .and_then(|i| reg.groups().get_mut(i))
    {
        Some(g) => g.name = name.to_vec(),
        None => message::warn(&format!(
            "FTI_RenameGroup: group {} is not registered",
            group.id
        )),
    }
    FTI_SCES
}
