#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fti_rs_fuzz::fti_posix_meta(data));
