//! `struct ovni_ev` and the functions that build one (no state).

use std::ffi::{c_char, c_int, c_long};
use std::mem::{align_of, size_of};

use ovni_rs::raw::{normal_payload_len, EV_HEADER_SIZE, FLAG_JUMBO, MAX_PAYLOAD};
use ovni_rs::write::EV_IMAGE_SIZE;

use crate::fatal::{cstr, die};

/// `OVNI_EV_JUMBO`: the event's payload is a u32 size followed by that many bytes.
pub const OVNI_EV_JUMBO: u8 = FLAG_JUMBO;
/// `OVNI_MARK_STACK`: a mark type whose values are pushed and popped.
pub const OVNI_MARK_STACK: c_long = 1;
/// `OVNI_MAX_EV_BUF`: size of each thread's event buffer.
pub const OVNI_MAX_EV_BUF: i64 = 2 * 1024 * 1024;

/// `struct ovni_ev_header`: 12 packed bytes, the clock unaligned at offset 4.
#[repr(C, packed)]
#[derive(Debug, Clone, Copy, Default)]
pub struct OvniEvHeader {
    /// Flags in the high nibble, payload size code in the low one.
    pub flags: u8,
    /// Model character.
    pub model: u8,
    /// Category character.
    pub category: u8,
    /// Value character.
    pub value: u8,
    /// Clock in nanoseconds, host byte order.
    pub clock: u64,
}

/// `struct ovni_ev`: header and `union ovni_ev_payload`, seen here as its 16 bytes (the
/// union's integer views and `struct ovni_jumbo_payload` all start at offset 0).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct OvniEv {
    /// Flags, MCV and clock.
    pub header: OvniEvHeader,
    /// Normal payload, or the jumbo size (u32, host byte order) of a jumbo event.
    pub payload: [u8; MAX_PAYLOAD],
}

// Programs allocate `struct ovni_ev` themselves: the layout is the ABI.
const _: () = assert!(size_of::<OvniEvHeader>() == 12 && align_of::<OvniEvHeader>() == 1);
const _: () = assert!(size_of::<OvniEv>() == 28 && align_of::<OvniEv>() == 1);

// `struct ovni_ev` lives in the program's memory, in host byte order; only these two helpers
// read or write its multi-byte payload fields.
#[allow(clippy::host_endian_bytes)]
pub(crate) fn host_u32(b: [u8; 4]) -> u32 {
    u32::from_ne_bytes(b)
}

#[allow(clippy::host_endian_bytes)]
pub(crate) fn host_u32_bytes(v: u32) -> [u8; 4] {
    v.to_ne_bytes()
}

impl OvniEv {
    pub(crate) fn is_jumbo(&self) -> bool {
        self.header.flags & OVNI_EV_JUMBO != 0
    }

    pub(crate) fn mcv(&self) -> ovni_rs::Mcv {
        let h = self.header;
        ovni_rs::Mcv([h.model, h.category, h.value])
    }

    /// `ovni_payload_size`: 4 + data size for jumbo events, else what the size code says.
    pub(crate) fn payload_size(&self) -> u64 {
        if self.is_jumbo() {
            let [a, b, c, d, ..] = self.payload;
            4 + u64::from(host_u32([a, b, c, d]))
        } else {
            normal_payload_len(self.header.flags) as u64
        }
    }

    /// The event as `stream.obs` stores it, without a copy: on a little-endian host the
    /// struct's bytes are that image (clock little-endian at offset 4, payload after it).
    /// Building a copy field by field and reading it back as one block stalls the CPU's
    /// store forwarding, which costs more than the rest of an emit.
    #[cfg(target_endian = "little")]
    #[inline]
    pub(crate) fn image_bytes(&self) -> &[u8; EV_IMAGE_SIZE] {
        // SAFETY: `OvniEv` is `repr(C)` over `repr(C, packed)` fields of bytes and a `u64`,
        // 28 bytes with alignment 1 and no padding (asserted above), and every byte of a live
        // value is initialised, so it can be read as `[u8; 28]` for as long as it is borrowed.
        unsafe { &*(self as *const Self).cast::<[u8; EV_IMAGE_SIZE]>() }
    }

    /// As above, on other hosts: a copy with the clock converted to little-endian.
    #[cfg(not(target_endian = "little"))]
    #[inline]
    pub(crate) fn image_bytes(&self) -> [u8; EV_IMAGE_SIZE] {
        self.image()
    }

    /// The event with its clock little-endian, as `stream.obs` stores it (for a normal
    /// event, its first 12 + payload size bytes).
    #[cfg_attr(target_endian = "little", allow(dead_code))]
    pub(crate) fn image(&self) -> [u8; EV_IMAGE_SIZE] {
        let h = self.header;
        let mut out = [0u8; EV_IMAGE_SIZE];
        let (head, payload) = out.split_at_mut(EV_HEADER_SIZE);
        let (mcv, clock) = head.split_at_mut(4);
        mcv.copy_from_slice(&[h.flags, h.model, h.category, h.value]);
        clock.copy_from_slice(&{ h.clock }.to_le_bytes());
        payload.copy_from_slice(&self.payload);
        out
    }

    /// Appends to a normal payload, with `ovni_payload_add`'s checks.
    pub(crate) fn payload_add(&mut self, bytes: &[u8]) {
        let fatal = |msg: String| -> ! { die("ovni_payload_add", msg) };
        if self.is_jumbo() {
            fatal("event is marked as jumbo".into());
        }
        let have = normal_payload_len(self.header.flags);
        let total = have + bytes.len();
        let Some(dst) = self.payload.get_mut(have..total) else {
            fatal(format!("no space left for {} bytes", bytes.len()))
        };
        dst.copy_from_slice(bytes);
        // total is 2..=16, so its size code fits the low nibble.
        self.header.flags = (self.header.flags & 0xf0) | ((total - 1) as u8 & 0x0f);
    }
}

/// The event behind `ev`, or FATAL from `func` for NULL.
///
/// # Safety
/// `ev` is NULL or points to a `struct ovni_ev` the caller may write.
pub(crate) unsafe fn ev_mut<'a>(ev: *mut OvniEv, func: &str) -> &'a mut OvniEv {
    // SAFETY: alignment is 1, and the caller guarantees a valid, writable event.
    match unsafe { ev.as_mut() } {
        Some(ev) => ev,
        None => die(func, "event is NULL"),
    }
}

/// As [`ev_mut`], read-only.
///
/// # Safety
/// `ev` is NULL or points to a `struct ovni_ev`.
pub(crate) unsafe fn ev_ref<'a>(ev: *const OvniEv, func: &str) -> &'a OvniEv {
    // SAFETY: alignment is 1, and the caller guarantees a valid event.
    match unsafe { ev.as_ref() } {
        Some(ev) => ev,
        None => die(func, "event is NULL"),
    }
}

/// Sets the model, category and value from the first three characters of `mcv`.
///
/// # Safety
/// `ev` points to a `struct ovni_ev`; `mcv` to a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ovni_ev_set_mcv(ev: *mut OvniEv, mcv: *const c_char) {
    // SAFETY: forwarded contract.
    let ev = unsafe { ev_mut(ev, "ovni_ev_set_mcv") };
    // SAFETY: forwarded contract.
    let Some(mcv) = (unsafe { cstr(mcv) }) else {
        die("ovni_ev_set_mcv", "mcv is NULL")
    };
    // Reading up to the NUL keeps a short string from being read past its end.
    let mut b = mcv.to_bytes().iter().copied();
    let h = &mut ev.header;
    h.model = b.next().unwrap_or(0);
    h.category = b.next().unwrap_or(0);
    h.value = b.next().unwrap_or(0);
}

/// The event's clock.
///
/// # Safety
/// `ev` points to a `struct ovni_ev`.
#[no_mangle]
pub unsafe extern "C" fn ovni_ev_get_clock(ev: *const OvniEv) -> u64 {
    // SAFETY: forwarded contract.
    let ev = unsafe { ev_ref(ev, "ovni_ev_get_clock") };
    ev.header.clock
}

/// Sets the event's clock (any value).
///
/// # Safety
/// `ev` points to a `struct ovni_ev`.
#[no_mangle]
pub unsafe extern "C" fn ovni_ev_set_clock(ev: *mut OvniEv, clock: u64) {
    // SAFETY: forwarded contract.
    let ev = unsafe { ev_mut(ev, "ovni_ev_set_clock") };
    ev.header.clock = clock;
}

/// Appends `size` bytes (at least 2, 16 in all) to the payload of a normal event.
///
/// # Safety
/// `ev` points to a `struct ovni_ev`; `buf` to `size` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn ovni_payload_add(ev: *mut OvniEv, buf: *const u8, size: c_int) {
    // SAFETY: forwarded contract.
    let ev = unsafe { ev_mut(ev, "ovni_payload_add") };
    if ev.is_jumbo() {
        die("ovni_payload_add", "event is marked as jumbo");
    }
    let n = match usize::try_from(size) {
        Ok(n) if n >= 2 => n,
        _ => die("ovni_payload_add", format!("payload size {size} too small")),
    };
    if normal_payload_len(ev.header.flags) + n > MAX_PAYLOAD {
        die(
            "ovni_payload_add",
            format!("no space left for {size} bytes"),
        );
    }
    if buf.is_null() {
        die("ovni_payload_add", "payload buffer is NULL");
    }
    // SAFETY: non-NULL, and the caller guarantees `size` readable bytes.
    let bytes = unsafe { std::slice::from_raw_parts(buf, n) };
    ev.payload_add(bytes);
}

/// Size of the event in the stream: 12 + the payload size.
///
/// # Safety
/// `ev` points to a `struct ovni_ev`.
#[no_mangle]
pub unsafe extern "C" fn ovni_ev_size(ev: *const OvniEv) -> c_int {
    // SAFETY: forwarded contract.
    let ev = unsafe { ev_ref(ev, "ovni_ev_size") };
    // Wraps like libovni's conversion to int for absurd jumbo sizes.
    (EV_HEADER_SIZE as u64 + ev.payload_size()) as c_int
}

/// Size of the payload: 0 or 2..=16 for normal events, 4 + data size for jumbo ones.
///
/// # Safety
/// `ev` points to a `struct ovni_ev`.
#[no_mangle]
pub unsafe extern "C" fn ovni_payload_size(ev: *const OvniEv) -> c_int {
    // SAFETY: forwarded contract.
    let ev = unsafe { ev_ref(ev, "ovni_payload_size") };
    ev.payload_size() as c_int
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_puts_the_clock_little_endian_after_flags_and_mcv() {
        let mut ev = OvniEv::default();
        ev.header.clock = 0x0102_0304_0506_0708;
        ev.header.model = b'O';
        ev.header.category = b'A';
        ev.header.value = b's';
        ev.payload_add(&[1, 2, 3, 4]);
        let bytes = ev.image();
        assert_eq!(
            bytes.get(..16).unwrap(),
            [3, b'O', b'A', b's', 8, 7, 6, 5, 4, 3, 2, 1, 1, 2, 3, 4]
        );
        assert_eq!(bytes.get(16..).unwrap(), [0; 12]);
    }

    #[test]
    fn payload_add_keeps_the_high_nibble() {
        let mut ev = OvniEv::default();
        ev.header.flags = 0x20;
        ev.payload_add(&[1, 2]);
        ev.payload_add(&[3; 14]);
        assert_eq!(ev.header.flags, 0x2f);
        assert_eq!(ev.payload_size(), 16);
    }

    #[test]
    fn jumbo_payload_size_reads_the_host_order_size() {
        let mut ev = OvniEv::default();
        ev.header.flags = OVNI_EV_JUMBO | 3;
        let [a, b, c, d] = host_u32_bytes(1000);
        ev.payload[..4].copy_from_slice(&[a, b, c, d]);
        assert_eq!(ev.payload_size(), 1004);
    }
}
