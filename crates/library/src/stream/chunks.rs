//! Reading a span of a file in chunks of a fixed size, and to the end of a
//! buffer: the one way the streaming passes read a file.

use crate::backing::Opened;
use std::io;

/// Bytes read from the file at a time (even, so that UTF-16 units never
/// straddle two chunks; small in tests, so that they cross many).
#[cfg(not(test))]
pub(super) const CHUNK: usize = 1 << 20;
#[cfg(test)]
pub(super) const CHUNK: usize = 4096;

/// Reads `[start, end)` of `file` in chunks, handing each to `each` with
/// its offset.
pub(super) fn for_each_chunk(
    file: &dyn Opened,
    start: u64,
    end: u64,
    mut each: impl FnMut(u64, &[u8]) -> bool,
) -> io::Result<()> {
    let mut buf = vec![0u8; CHUNK];
    let mut at = start;
    while at < end {
        let want = ((end - at) as usize).min(CHUNK);
        let got = read_full(file, &mut buf[..want], at)?;
        if got < want {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file got shorter while it was read",
            ));
        }
        if !each(at, &buf[..want]) {
            break;
        }
        at += want as u64;
    }
    Ok(())
}

/// `read_at` until `buf` is full or the file ends; the bytes read.
pub(super) fn read_full(file: &dyn Opened, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
