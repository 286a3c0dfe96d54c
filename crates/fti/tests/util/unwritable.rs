//! Making a directory unwritable in a way that binds root too, for tests of what the runtime
//! does when it cannot write there.

use std::path::Path;
use std::process::Command;

/// Makes `dir` unwritable for this process, root included: `chattr +i` as root (mode bits do
/// not bind root), `chmod 555` otherwise. Returns the undo.
pub fn make_unwritable(dir: &Path) -> impl FnOnce() {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let dir = dir.to_path_buf();
    let (lock, unlock) = if root {
        (["chattr", "+i"], ["chattr", "-i"])
    } else {
        (["chmod", "555"], ["chmod", "755"])
    };
    let status = Command::new(lock[0])
        .arg(lock[1])
        .arg(&dir)
        .status()
        .unwrap();
    assert!(status.success(), "{lock:?} {} failed", dir.display());
    move || {
        let status = Command::new(unlock[0])
            .arg(unlock[1])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success(), "{unlock:?} {} failed", dir.display());
    }
}
