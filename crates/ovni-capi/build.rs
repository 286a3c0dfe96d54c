//! Gives libovni.so the SONAME of libovni 1.14, so programs linked against either library
//! run with the other.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libovni.so.1");
    }
}
