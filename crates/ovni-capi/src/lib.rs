//! libovni 1.14 C API.
