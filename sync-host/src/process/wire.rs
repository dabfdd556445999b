//! Messages between the processes of a group: one `SOCK_SEQPACKET` Unix socket per
//! link, so every message arrives whole or not at all, with the file descriptors it
//! carries (`SCM_RIGHTS`) attached to it.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The first word of every message: "SSPG", little-endian.
const MAGIC: u32 = u32::from_le_bytes(*b"SSPG");

/// The most file descriptors one message carries (the kernel allows 253).
pub(super) const MAX_FDS: usize = 64;

/// The largest message a process accepts (the payloads are a few hundred bytes).
const MAX_MESSAGE: usize = 64 * 1024;

/// The header: magic, kind, then the payload.
const HEADER: usize = 8;

/// What a message says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(super) enum Kind {
    /// A joining process: its rank, the group's size, its job secret.
    Hello = 1,
    /// The coordinator admitted the joining process.
    Welcome = 2,
    /// The coordinator refused it: the payload says why (UTF-8).
    Refused = 3,
    /// One process's part of a collective: its bytes and file descriptors.
    Contribute = 4,
    /// Every process's part of a collective, from the coordinator.
    Gathered = 5,
    /// The sender leaves the group in order (its end of the link closes next).
    Goodbye = 6,
    /// From the coordinator: a process left without a goodbye (the payload: its rank,
    /// then 1 if it died, 0 if it reported a failure).
    Failed = 7,
    /// To the coordinator: this process's GPU work failed; the group cannot go on.
    Abort = 8,
    /// From the coordinator, in place of `Gathered`: the processes are at different
    /// collectives (the payload says which, UTF-8).
    OutOfStep = 9,
}

impl Kind {
    fn from_u32(value: u32) -> Option<Self> {
        Some(match value {
            1 => Self::Hello,
            2 => Self::Welcome,
            3 => Self::Refused,
            4 => Self::Contribute,
            5 => Self::Gathered,
            6 => Self::Goodbye,
            7 => Self::Failed,
            8 => Self::Abort,
            9 => Self::OutOfStep,
            _ => return None,
        })
    }
}

/// A received message.
#[derive(Debug)]
pub(super) struct Message {
    pub(super) kind: Kind,
    pub(super) payload: Vec<u8>,
    pub(super) fds: Vec<OwnedFd>,
}

/// Sends one message with `fds` attached. Retries on `EINTR`.
pub(super) fn send(
    socket: BorrowedFd<'_>,
    kind: Kind,
    payload: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    assert!(
        fds.len() <= MAX_FDS,
        "at most {MAX_FDS} file descriptors a message"
    );
    assert!(payload.len() + HEADER <= MAX_MESSAGE, "message too long");
    let mut bytes = Vec::with_capacity(HEADER + payload.len());
    bytes.extend_from_slice(&MAGIC.to_le_bytes());
    bytes.extend_from_slice(&(kind as u32).to_le_bytes());
    bytes.extend_from_slice(payload);
    let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
    let mut iov = libc::iovec {
        iov_base: bytes.as_mut_ptr().cast(),
        iov_len: bytes.len(),
    };
    let mut control = vec![0_u8; control_space(raw.len())];
    // SAFETY: `msghdr` is plain data; all-zero is its empty value.
    let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
    header.msg_iov = &mut iov;
    header.msg_iovlen = 1;
    if !raw.is_empty() {
        header.msg_control = control.as_mut_ptr().cast();
        header.msg_controllen = control.len() as _;
        // SAFETY: `control` holds `CMSG_SPACE` of the descriptors' bytes, so the first
        // header and its data fit in it.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&header);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(raw.as_slice()) as u32) as _;
            std::ptr::copy_nonoverlapping(
                raw.as_ptr().cast::<u8>(),
                libc::CMSG_DATA(cmsg),
                std::mem::size_of_val(raw.as_slice()),
            );
        }
    }
    loop {
        // SAFETY: `header` points at `iov` and `control`, both alive for the call.
        let sent = unsafe { libc::sendmsg(socket.as_raw_fd(), &header, libc::MSG_NOSIGNAL) };
        if sent >= 0 {
            // A sequenced-packet socket sends the message whole or fails.
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Receives one message; `Ok(None)` when the other end closed the link. The caller
/// polls first: this call blocks until a message or the end arrives.
pub(super) fn receive(socket: BorrowedFd<'_>) -> io::Result<Option<Message>> {
    let mut bytes = vec![0_u8; MAX_MESSAGE];
    let mut control = vec![0_u8; control_space(MAX_FDS)];
    let mut iov = libc::iovec {
        iov_base: bytes.as_mut_ptr().cast(),
        iov_len: bytes.len(),
    };
    // SAFETY: plain data, all-zero is empty.
    let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
    header.msg_iov = &mut iov;
    header.msg_iovlen = 1;
    header.msg_control = control.as_mut_ptr().cast();
    header.msg_controllen = control.len() as _;
    let received = loop {
        // SAFETY: `header` points at `iov` and `control`, alive for the call.
        let received =
            unsafe { libc::recvmsg(socket.as_raw_fd(), &mut header, libc::MSG_CMSG_CLOEXEC) };
        if received >= 0 {
            break received as usize;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    };
    // Take ownership of every descriptor first, so that an error below closes them.
    let fds = descriptors(&header);
    if received == 0 {
        return Ok(None);
    }
    if header.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
        return Err(invalid("a message longer than the group's limit"));
    }
    if received < HEADER || bytes[..4] != MAGIC.to_le_bytes() {
        return Err(invalid("a message without the group's header"));
    }
    let kind = u32::from_le_bytes(bytes[4..8].try_into().expect("four bytes"));
    let kind = Kind::from_u32(kind).ok_or_else(|| invalid("a message of an unknown kind"))?;
    bytes.truncate(received);
    bytes.drain(..HEADER);
    Ok(Some(Message {
        kind,
        payload: bytes,
        fds,
    }))
}

/// The descriptors of every `SCM_RIGHTS` header of a received message, owned.
fn descriptors(header: &libc::msghdr) -> Vec<OwnedFd> {
    let mut fds = Vec::new();
    if header.msg_control.is_null() {
        return fds;
    }
    // SAFETY: the kernel filled `msg_control` up to `msg_controllen`; the CMSG macros
    // walk only within it, and each SCM_RIGHTS payload is an array of descriptors the
    // kernel installed in this process for us to own.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(header);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg);
                let bytes = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..bytes / std::mem::size_of::<RawFd>() {
                    let fd = data
                        .add(i * std::mem::size_of::<RawFd>())
                        .cast::<RawFd>()
                        .read_unaligned();
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            cmsg = libc::CMSG_NXTHDR(header, cmsg);
        }
    }
    fds
}

/// Control-buffer bytes for `fds` descriptors.
fn control_space(fds: usize) -> usize {
    // SAFETY: pure arithmetic on the length.
    unsafe { libc::CMSG_SPACE((fds.max(1) * std::mem::size_of::<RawFd>()) as u32) as usize }
}

pub(super) fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

/// A connected pair of sequenced-packet sockets (tests and the coordinator's own end).
#[cfg(test)]
pub(super) fn pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    let done = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "sockets and sendmsg are foreign calls")]
    fn a_message_arrives_whole_with_its_descriptors() {
        let (a, b) = pair().unwrap();
        // The descriptor carried: one end of another link, used once it arrived.
        let (carried, far_end) = pair().unwrap();
        send(a.as_fd(), Kind::Contribute, b"hello", &[carried.as_fd()]).unwrap();
        drop(carried);
        let message = receive(b.as_fd()).unwrap().unwrap();
        assert_eq!(message.kind, Kind::Contribute);
        assert_eq!(message.payload, b"hello");
        assert_eq!(message.fds.len(), 1);
        send(message.fds[0].as_fd(), Kind::Goodbye, b"through", &[]).unwrap();
        let through = receive(far_end.as_fd()).unwrap().unwrap();
        assert_eq!(
            (through.kind, through.payload.as_slice()),
            (Kind::Goodbye, &b"through"[..])
        );
        drop(a);
        assert!(receive(b.as_fd()).unwrap().is_none(), "the end of the link");
    }

    #[test]
    #[cfg_attr(miri, ignore = "sockets are foreign calls")]
    fn a_message_without_the_header_is_refused() {
        let (a, b) = pair().unwrap();
        // SAFETY: a valid buffer of 3 bytes.
        let sent = unsafe { libc::send(a.as_raw_fd(), b"abc".as_ptr().cast(), 3, 0) };
        assert_eq!(sent, 3);
        let error = receive(b.as_fd()).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    }
}
