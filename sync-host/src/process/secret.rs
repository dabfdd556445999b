//! [`JobSecret`]: what every process of one job presents when it joins its group.

use std::fmt;

/// Random bytes every process of one job presents when it joins: a process of
/// another job, or of none, cannot attach to the group's memory. Made by the launcher
/// ([`generate`](Self::generate)) and passed in
/// [`SECRET_VARIABLE`](super::SECRET_VARIABLE) as hex.
#[derive(Clone, PartialEq, Eq)]
pub struct JobSecret(pub(super) Vec<u8>);

impl JobSecret {
    /// Bytes of a generated secret.
    pub const BYTES: usize = 32;

    /// A fresh secret from the kernel's random source (`getrandom(2)`).
    ///
    /// # Errors
    ///
    /// If the kernel has no random bytes to give.
    pub fn generate() -> std::io::Result<Self> {
        let mut bytes = vec![0_u8; Self::BYTES];
        let mut filled = 0;
        while filled < bytes.len() {
            // SAFETY: writes at most the rest of `bytes`.
            let got = unsafe {
                libc::getrandom(bytes[filled..].as_mut_ptr().cast(), bytes.len() - filled, 0)
            };
            if got < 0 {
                let error = std::io::Error::last_os_error();
                if error.kind() != std::io::ErrorKind::Interrupted {
                    return Err(error);
                }
            } else {
                filled += got as usize;
            }
        }
        Ok(Self(bytes))
    }

    /// The secret of `hex`: at least 32 hex digits (128 bits), at most 128.
    ///
    /// # Errors
    ///
    /// A message saying what is wrong with `hex`.
    pub fn from_hex(hex: &str) -> Result<Self, String> {
        let hex = hex.trim();
        if hex.len() < 32 || hex.len() > 128 || hex.len() % 2 != 0 {
            return Err(format!(
                "a job secret is 32 to 128 hex digits, an even count; this one has {}",
                hex.len()
            ));
        }
        let digits: Option<Vec<u8>> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect();
        digits
            .map(Self)
            .ok_or_else(|| "a job secret holds only the digits 0-9 and a-f".to_owned())
    }

    /// The secret as lowercase hex (what [`SECRET_VARIABLE`](super::SECRET_VARIABLE) holds).
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// Compares without stopping at the first difference (the time a refusal takes
    /// says nothing of how much of a guess was right).
    pub(super) fn matches(&self, other: &[u8]) -> bool {
        self.0.len() == other.len()
            && self
                .0
                .iter()
                .zip(other)
                .fold(0_u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }

    /// A job name derived from the secret (FNV-1a): the same in every process, and it
    /// does not show the secret.
    pub(super) fn job_name(&self) -> String {
        let hash = self
            .0
            .iter()
            .fold(0xcbf2_9ce4_8422_2325_u64, |hash, &byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
            });
        format!("{hash:016x}")
    }
}

impl fmt::Debug for JobSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JobSecret(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "getrandom is a foreign call")]
    fn a_secret_round_trips_through_hex_and_never_prints() {
        let secret = JobSecret::generate().unwrap();
        assert_eq!(secret.to_hex().len(), 2 * JobSecret::BYTES);
        assert_eq!(JobSecret::from_hex(&secret.to_hex()).unwrap(), secret);
        assert_ne!(JobSecret::generate().unwrap(), secret);
        assert_eq!(format!("{secret:?}"), "JobSecret(..)");
        assert!(JobSecret::from_hex(&"g".repeat(64)).is_err());
        assert!(secret.matches(&secret.0) && !secret.matches(&[0; JobSecret::BYTES]));
    }
}
