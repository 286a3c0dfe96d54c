//! The ABI as C and C++ see it (`tests/c/abi.c`, `tests/c/abi_cpp.cpp`), linked both ways; the
//! shared library's SONAME and exported symbols.

use std::process::Command;

use crate::util::{self, Link};

/// What `abi.c` prints: FTI 1.1's layouts, constants and predefined types (fact sheet §2-§4),
/// and the type, group and dataset functions' results.
const EXPECTED: &str = "\
functions 23
FTIT_type 24 8: id 0 size 4 structure 8 h5group 16
FTIT_typeField 396: typeID 0 offset 4 rank 8 dimLength 12 name 140
FTIT_complexType 101636: name 0 length 256 field 260
FTIT_H5Group 1288: id 0 name 4 childrenNo 260 childrenID 264
FTIT_double 8 FTIT_float 4
codes 0 -1 -2 1
priorities 1 2 3 4
tokens 990 991 992 993 994 995 996
io 1001 1002 1003 1005
bufs 256 word 16 md5 16 33
colours 0 0 0 0
types before init 0:0 0:0 0:0 0:0 0:0 0:0 0:0 0:0 0:0 0:0 0:0
FTI_COMM_WORLD before init null 1
init 0
types after init 0:1 1:2 2:4 3:8 4:1 5:2 6:4 7:8 8:4 9:8 10:16
FTI_COMM_WORLD congruent 1 ident 0 size 1
InitType 0 0 id 11 size 12 structure 1
second type id 12
InitComplexType 0 id 13 size 32 structure 1 name point length 2
fields n:2@0 rank 1 dim 1, T1:9@8 rank 1 dim 3
unnamed 0 Type14
refused -1 -1 -1 -1 -1, field name T0
InitGroup 0 id 1 name grid children 0
same name under root -1
child 0 id 2
same name under grid -1
rename 0
name free again 0 id 3, caller's name kept sub
unknown parent -1
protect 0
DefineDataset 0 -1 -1 -1 -1 -1
finalize 0 status 0
";

#[test]
fn layouts_constants_types_and_groups_match_fti_1_1() {
    for link in [Link::Shared, Link::Static] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = util::config(dir.path(), "");
        let exe = util::compile("abi", link);
        let out = util::run(&exe, &[cfg.to_str().unwrap()], dir.path());
        let stdout = util::success("abi", &out);
        let mut got = util::results(&stdout).join("\n");
        got.push('\n');
        assert_eq!(got, EXPECTED, "{link:?}\n{stdout}");
    }
}

#[test]
fn the_header_compiles_as_cpp() {
    let exe = util::compile_file(&util::crate_dir().join("tests/c/abi_cpp.cpp"), Link::Shared);
    let dir = tempfile::tempdir().unwrap();
    let out = util::run(&exe, &[], dir.path());
    let stdout = util::success("abi_cpp", &out);
    // Before FTI_Init: types work, the rest refuses (FTI_Protect: not initialised).
    assert_eq!(
        util::results(&stdout),
        ["InitType 0 size 8 structure 1", "Status 0 Protect -1"],
        "{stdout}"
    );
}

#[test]
fn shared_library_is_libfti_so_exporting_fti_s_symbols() {
    let lib = util::lib_dir().join("libfti.so");
    let out = Command::new("readelf")
        .arg("-dW")
        .arg(&lib)
        .output()
        .unwrap();
    let dynamic = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(dynamic.contains("Library soname: [libfti.so]"), "{dynamic}");
    // The MPI library of the MPI the tests build with ($MPICC): libmpi.so.40 for Open MPI,
    // libmpich.so.12 for MPICH. A program linked with libfti.a needs exactly it.
    let program = util::compile("abi", Link::Static);
    let out = Command::new("readelf")
        .arg("-dW")
        .arg(&program)
        .output()
        .unwrap();
    let mpi = needed_mpi(&String::from_utf8_lossy(&out.stdout));
    assert!(!mpi.is_empty(), "an MPI program needs no MPI library");
    assert_eq!(
        needed_mpi(&dynamic),
        mpi,
        "libfti.so must need the MPI library of $MPICC's programs:\n{dynamic}"
    );
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .unwrap();
    let symbols = String::from_utf8_lossy(&out.stdout);
    let exported: Vec<&str> = symbols
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| s.starts_with("FTI_"))
        .collect();
    for name in [
        "FTI_Init",
        "FTI_Status",
        "FTI_InitType",
        "FTI_InitComplexType",
        "FTI_AddSimpleField",
        "FTI_AddComplexField",
        "FTI_InitGroup",
        "FTI_RenameGroup",
        "FTI_Protect",
        "FTI_DefineDataset",
        "FTI_GetStoredSize",
        "FTI_Realloc",
        "FTI_BitFlip",
        "FTI_Checkpoint",
        "FTI_Recover",
        "FTI_Snapshot",
        "FTI_Finalize",
        "FTI_RecoverVar",
        "FTI_InitICP",
        "FTI_AddVarICP",
        "FTI_FinalizeICP",
        "FTI_RecoverVarInit",
        "FTI_RecoverVarFinalize",
        "FTI_COMM_WORLD",
        "FTI_CHAR",
        "FTI_SHRT",
        "FTI_INTG",
        "FTI_LONG",
        "FTI_UCHR",
        "FTI_USHT",
        "FTI_UINT",
        "FTI_ULNG",
        "FTI_SFLT",
        "FTI_DBLE",
        "FTI_LDBE",
    ] {
        assert!(
            exported.contains(&name),
            "{name} is not exported: {exported:?}"
        );
    }
    assert_eq!(exported.len(), 35, "unexpected FTI_ symbols: {exported:?}");
}

/// The MPI libraries (`lib*mpi*`) among the NEEDED entries of `readelf -d` output.
fn needed_mpi(dynamic: &str) -> Vec<String> {
    dynamic
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.split('[').nth(1)?.strip_suffix(']'))
        .filter(|name| name.contains("mpi"))
        .map(str::to_owned)
        .collect()
}
