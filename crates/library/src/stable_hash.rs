//! The one hash of values that outlive a process or cross machines:
//! versions and stamps kept in the persistent and the published index and
//! the inode journal, inode numbers a bucket's versions give. It is XXH3
//! (64 bits, seed 0), a named algorithm with a fixed output, fed every
//! integer in little-endian order, so a build with another toolchain or on
//! another machine computes the same value for the same input (std's
//! `DefaultHasher` promises neither). `tests` pins its values.

use std::hash::{Hash, Hasher};

/// XXH3-64 behind `std::hash::Hasher`.
#[derive(Clone, Default)]
pub struct StableHasher(xxhash_rust::xxh3::Xxh3);

impl StableHasher {
    pub fn new() -> StableHasher {
        StableHasher::default()
    }
}

impl Hasher for StableHasher {
    fn finish(&self) -> u64 {
        self.0.digest()
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn write_u8(&mut self, i: u8) {
        self.write(&[i]);
    }

    fn write_u16(&mut self, i: u16) {
        self.write(&i.to_le_bytes());
    }

    fn write_u32(&mut self, i: u32) {
        self.write(&i.to_le_bytes());
    }

    fn write_u64(&mut self, i: u64) {
        self.write(&i.to_le_bytes());
    }

    fn write_u128(&mut self, i: u128) {
        self.write(&i.to_le_bytes());
    }

    /// As 64 bits, so that 32- and 64-bit machines agree.
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }

    fn write_i8(&mut self, i: i8) {
        self.write_u8(i as u8);
    }

    fn write_i16(&mut self, i: i16) {
        self.write_u16(i as u16);
    }

    fn write_i32(&mut self, i: i32) {
        self.write_u32(i as u32);
    }

    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }

    fn write_i128(&mut self, i: i128) {
        self.write_u128(i as u128);
    }

    fn write_isize(&mut self, i: isize) {
        self.write_u64(i as u64);
    }
}

/// The stable hash of `value` through its `Hash`.
pub fn stable_hash(value: &(impl Hash + ?Sized)) -> u64 {
    let mut h = StableHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// The stable hash of `bytes` alone, as they are.
pub fn stable_hash_bytes(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values are the algorithm's, fixed for ever: a change of
    /// algorithm, of byte order or of how std feeds a type fails here
    /// before it makes every persisted version look new.
    #[test]
    fn values_are_pinned() {
        assert_eq!(stable_hash_bytes(b""), 0x2d06800538d394c2);
        assert_eq!(
            stable_hash_bytes("第01章".as_bytes()),
            stable_hash_bytes(&[0xe7, 0xac, 0xac, 0x30, 0x31, 0xe7, 0xab, 0xa0])
        );
        let mut h = StableHasher::new();
        h.write_u64(1);
        assert_eq!(h.finish(), stable_hash_bytes(&1u64.to_le_bytes()));
        assert_eq!(stable_hash(&(7u64, -1i64)), PINNED_PAIR);
        assert_eq!(stable_hash("书"), PINNED_STR);
    }

    const PINNED_PAIR: u64 = 9487066144197890201;
    const PINNED_STR: u64 = 5146860456646763649;
}
