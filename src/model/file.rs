//! The one way an input file a user hands campaign is read: a plan, a seed case file, a report
//! template. Only regular files are read — a FIFO, a device or a socket is refused at once
//! instead of blocking `open` (the open itself never waits: `O_NONBLOCK`) or reading without
//! end (`/dev/zero`) — and only up to a size cap, so a hostile path costs a message, not a hang.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Largest input file campaign reads whole (plans, case files, templates).
pub(crate) const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// Read `path` whole if it is a regular file (links followed) of at most `max` bytes. The error
/// says what the file is instead (kind `InvalidInput`) or why it cannot be read.
pub(crate) fn read_regular(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let (file, meta) = open_regular(path)?;
    if meta.len() > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("is {} bytes; at most {max} are read", meta.len()),
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow while it is read: never past the cap.
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("grew past {max} bytes while it was read"),
        ));
    }
    Ok(bytes)
}

/// Open `path` for reading if it is a regular file (links followed), with its metadata; a FIFO,
/// device or socket is refused (kind `InvalidInput`) without ever blocking in `open`.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("is {}, not a regular file", kind(&meta)),
        ));
    }
    Ok((file, meta))
}

/// [`read_regular`] as UTF-8 text.
pub(crate) fn read_regular_text(path: &Path, max: u64) -> std::io::Result<String> {
    String::from_utf8(read_regular(path, max)?).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

fn kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_cap_are_read() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("plan.toml");
        std::fs::write(&file, "x = 1\n").unwrap();
        assert_eq!(read_regular_text(&file, 100).unwrap(), "x = 1\n");
        assert!(read_regular(&file, 3)
            .unwrap_err()
            .to_string()
            .contains("at most 3"));
        let fifo = tmp.path().join("fifo.toml");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Refused at once: nothing ever writes to this FIFO.
        assert!(read_regular(&fifo, 100)
            .unwrap_err()
            .to_string()
            .contains("a FIFO"));
        let e = read_regular(Path::new("/dev/zero"), 100).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        assert!(read_regular(tmp.path(), 100)
            .unwrap_err()
            .to_string()
            .contains("directory"));
        std::fs::write(&file, [0xff, 0xfe]).unwrap();
        assert!(read_regular_text(&file, 100)
            .unwrap_err()
            .to_string()
            .contains("UTF-8"));
    }
}
