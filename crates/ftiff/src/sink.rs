//! Where the writer puts a checkpoint file: anything that can write and read bytes at an
//! offset and set its length. The format holds no durability policy: the writer never syncs.
//! It tells the sink when every data container is written ([`Sink::data_written`]), so that a
//! sink which makes files durable can start on the data while the checksum is still running.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// A random-access file the writer fills.
pub trait Sink: Sync {
    /// Writes all of `buf` at byte `offset`.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Fills `buf` from byte `offset` (an incremental checkpoint reads its data back for the
    /// checksum).
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Cuts or extends the file to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Called once every data container of a full write is in the file, before the meta data
    /// and the file block (which the checksum, still running, decides). Nothing by default.
    fn data_written(&self) -> io::Result<()> {
        Ok(())
    }
}

impl Sink for File {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        FileExt::write_all_at(self, buf, offset)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }
}

impl<S: Sink + ?Sized + Send> Sink for Box<S> {
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        (**self).write_all_at(buf, offset)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        (**self).set_len(len)
    }

    fn data_written(&self) -> io::Result<()> {
        (**self).data_written()
    }
}
