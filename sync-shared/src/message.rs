//! Panic messages with numbers inside `const fn`s.
//!
//! `const fn new` must reject an expected count above `max()`, and the message must
//! carry the values; `format_args!` is not allowed in const contexts, but panicking
//! with a `&str` is, so the text is assembled in a fixed buffer.

/// A short text assembled at compile time or run time.
pub(crate) struct ConstMessage {
    bytes: [u8; 160],
    len: usize,
}

impl ConstMessage {
    pub(crate) const fn new() -> Self {
        Self {
            bytes: [0; 160],
            len: 0,
        }
    }

    /// Appends `text`, silently truncating at the buffer's end.
    pub(crate) const fn text(mut self, text: &str) -> Self {
        let src = text.as_bytes();
        let mut i = 0;
        while i < src.len() && self.len < self.bytes.len() {
            self.bytes[self.len] = src[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    /// Appends `value` in decimal.
    pub(crate) const fn number(mut self, mut value: u64) -> Self {
        let mut digits = [0u8; 20];
        let mut n = 0;
        loop {
            digits[n] = b'0' + (value % 10) as u8;
            n += 1;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        while n > 0 && self.len < self.bytes.len() {
            n -= 1;
            self.bytes[self.len] = digits[n];
            self.len += 1;
        }
        self
    }

    /// Panics with the assembled text.
    #[track_caller]
    pub(crate) const fn panic(self) -> ! {
        let (used, _) = self.bytes.split_at(self.len);
        match core::str::from_utf8(used) {
            Ok(text) => panic!("{}", text),
            Err(_) => panic!("scoped-sync: precondition violated"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn reject(expected: u32) -> u32 {
        if expected > 10 {
            ConstMessage::new()
                .text("Barrier::new: expected = ")
                .number(expected as u64)
                .text(" exceeds max() = ")
                .number(10)
                .panic();
        }
        expected
    }

    #[test]
    fn message_carries_the_numbers() {
        assert_eq!(reject(3), 3);
        let err = std::panic::catch_unwind(|| reject(4_000_000_000)).unwrap_err();
        let text = err
            .downcast_ref::<std::string::String>()
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            text,
            "Barrier::new: expected = 4000000000 exceeds max() = 10"
        );
    }
}
