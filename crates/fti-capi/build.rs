//! Gives the shared library the SONAME of FTI's (`libfti.so`), so that programs linked against
//! it with `-lfti` look for `libfti.so` at run time, whatever the file cargo built is called.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libfti.so");
    }
}
