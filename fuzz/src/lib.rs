//! Helpers shared by the fuzz targets: a cursor that turns the fuzzer's bytes into
//! lengths, selectors and slices without ever failing (short input gives zeros and empty
//! slices), so every input exercises something.

/// Reads structured values off the front of the fuzzer's input.
#[derive(Debug)]
pub struct Cursor<'a> {
    data: &'a [u8],
}

impl<'a> Cursor<'a> {
    /// A cursor over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// The next byte, or 0 when the input is used up.
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// The next two bytes as a little-endian number.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        usize::from(self.u16()) % n
    }

    /// Up to `n` bytes (fewer if the input runs out).
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    /// A length in `0..=max` read from the input, then up to that many bytes.
    pub fn take_upto(&mut self, max: usize) -> &'a [u8] {
        let n = self.below(max + 1);
        self.take(n)
    }

    /// Exactly `n` bytes: the input's, padded with a counting pattern when it runs out
    /// (for keys and nonces whose length the target fixes).
    pub fn exact(&mut self, n: usize) -> Vec<u8> {
        let mut v = self.take(n).to_vec();
        let have = v.len();
        v.extend((have..n).map(|i| i as u8));
        v
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.data)
    }
}
