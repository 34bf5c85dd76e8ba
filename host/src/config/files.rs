//! Reading a file that a config names (a key store, a provider's secret, a credentials file): a
//! regular file only, never more than a named number of bytes. A FIFO, a device or `/proc` file
//! reports a size of 0 and may never end or never open, so neither the size the file system
//! reports nor a plain `open` can be trusted: the file is opened without waiting for a writer,
//! checked to be a regular file on the descriptor itself (no swap between check and read), and
//! read through a cap.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The file at `path`, if it is a regular file (links followed) of at most `max` bytes; the error
/// names the path and what is wrong with it.
pub fn read_regular(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot open {} ({e})", path.display()))?;
    let metadata = file.metadata().map_err(|e| format!("cannot read {} ({e})", path.display()))?;
    if !metadata.is_file() {
        return Err(format!("{} is not a regular file; name a file that holds the value", path.display()));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read {} ({e})", path.display()))?;
    if bytes.len() as u64 > max {
        return Err(format!("{} is larger than {max} bytes", path.display()));
    }
    Ok(bytes)
}

/// As `read_regular`, as UTF-8 text.
pub fn read_regular_text(path: &Path, max: u64) -> Result<String, String> {
    String::from_utf8(read_regular(path, max)?).map_err(|_| format!("{} is not UTF-8 text", path.display()))
}

/// Makes a FIFO at `path`, for tests of what a reader does with one.
#[cfg(test)]
pub(crate) fn make_fifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid, NUL-terminated path; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_whole_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.properties");
        std::fs::write(&path, "k=v\n").unwrap();
        assert_eq!(read_regular_text(&path, 4).unwrap(), "k=v\n");
        let refused = read_regular(&path, 3).unwrap_err();
        assert!(refused.contains("larger than 3 bytes"), "{refused}");
    }

    #[test]
    fn devices_fifos_and_folders_are_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        make_fifo(&fifo);
        for path in [fifo.as_path(), Path::new("/dev/zero"), dir.path()] {
            let refused = read_regular(path, 1024).unwrap_err();
            assert!(refused.contains("is not a regular file") || refused.contains("cannot"), "{refused}");
        }
    }
}
