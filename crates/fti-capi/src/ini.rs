//! The few config keys the C API reads itself because only FTI's C API uses them:
//! `[basic] max_sync_intv` (FTI_Snapshot's synchronisation), `[injection] *` (FTI_BitFlip), and
//! whether `[basic] ckpt_io` is present. The runtime's `Config` has already read and validated
//! the file (same syntax: case-insensitive sections and keys, `;`/`#` comments).

use std::collections::HashMap;

/// `(section, key)` (lower case) to value.
#[derive(Debug, Default)]
pub(crate) struct Ini(HashMap<(String, String), String>);

impl Ini {
    pub(crate) fn parse(text: &str) -> Ini {
        let mut keys = HashMap::new();
        let mut section = String::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = name.trim().to_ascii_lowercase();
            } else if let Some((key, value)) = line.split_once('=') {
                let value = value.split([';', '#']).next().unwrap_or_default().trim();
                keys.insert(
                    (section.clone(), key.trim().to_ascii_lowercase()),
                    value.to_owned(),
                );
            }
        }
        Ini(keys)
    }

    pub(crate) fn has(&self, section: &str, key: &str) -> bool {
        self.0.contains_key(&(section.to_owned(), key.to_owned()))
    }

    /// An integer key; absent or unparsable reads as `default` (the runtime has already
    /// refused malformed integers where they matter).
    pub(crate) fn int(&self, section: &str, key: &str, default: i64) -> i64 {
        self.0
            .get(&(section.to_owned(), key.to_owned()))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    /// A number of seconds (FTI reads `[injection] frequency` as a float).
    pub(crate) fn float(&self, section: &str, key: &str, default: f64) -> f64 {
        self.0
            .get(&(section.to_owned(), key.to_owned()))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_keys_and_comments() {
        let ini = Ini::parse(
            "; top\n[Basic]\nMax_Sync_Intv = 64 ; comment\nckpt_io=3\n[injection]\nfrequency = 0.5\n# x = 1\n",
        );
        assert_eq!(ini.int("basic", "max_sync_intv", 0), 64);
        assert!(ini.has("basic", "ckpt_io"));
        assert!(!ini.has("basic", "x"));
        assert_eq!(ini.float("injection", "frequency", 0.0), 0.5);
        assert_eq!(ini.int("injection", "number", 7), 7);
    }
}
