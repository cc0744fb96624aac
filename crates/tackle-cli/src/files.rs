//! Reading the files the cassette tool is handed (cassettes, pending recordings, eval
//! reports and baselines): regular files only, so nothing blocks on a FIFO, a device
//! or a folder, and the file read is the one looked at.

use std::io::Read;
use std::path::Path;

use crate::exit::{CliError, Exit};

/// Whether [`read_regular`] follows a symbolic link named by the path itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Links {
    /// Read what the link points to (it must be a regular file).
    Follow,
    /// Refuse a link (exit 4): a recording to accept must be a file of its own.
    Refuse,
}

/// The bytes of the regular file at `path`. A FIFO, socket, device or folder is
/// refused (exit 5) before it is opened, so nothing blocks on it; a missing file is
/// exit 3; with [`Links::Refuse`], a symbolic link is exit 4. The file opened must be
/// the one looked at: one swapped in between is refused too.
pub(crate) fn read_regular(path: &Path, links: Links) -> Result<Vec<u8>, CliError> {
    let failed = |e: std::io::Error| CliError::new(Exit::Io, format!("{}: {e}", path.display()));
    let looked = match links {
        Links::Follow => std::fs::metadata(path),
        Links::Refuse => std::fs::symlink_metadata(path),
    };
    let looked = looked.map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            CliError::new(Exit::NotFound, format!("{}: no such file", path.display()))
        } else {
            failed(e)
        }
    })?;
    if looked.file_type().is_symlink() {
        return Err(CliError::new(
            Exit::Refused,
            format!(
                "{}: a symbolic link, not a recording: a cassette is never replaced by a link (refused)",
                path.display()
            ),
        ));
    }
    if !looked.is_file() {
        return Err(CliError::new(
            Exit::BadData,
            format!("{}: not a regular file", path.display()),
        ));
    }
    let mut file = std::fs::File::open(path).map_err(failed)?;
    let opened = file.metadata().map_err(failed)?;
    if !opened.is_file() || !same_file(&looked, &opened) {
        return Err(CliError::new(
            Exit::Refused,
            format!(
                "{}: replaced while it was opened; try again (refused)",
                path.display()
            ),
        ));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(failed)?;
    Ok(bytes)
}

/// Whether two metadata describe one file (on Unix, one device and inode).
#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// Whether two metadata describe one file (without inodes, the same size).
#[cfg(not(unix))]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    a.len() == b.len()
}
