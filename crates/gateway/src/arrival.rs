//! When a connection's bytes reached this machine: the kernel's receive time of the data a read
//! returned (`SO_TIMESTAMPNS`), for front ends that must serve callers on different connections
//! in the order their commands arrived.
//!
//! Why not the time the read returned: a front end serves each connection on its own task, and
//! with two runtime threads the task of a command that arrived second can run first. Redis'
//! blocking pops serve the caller that blocked first; two callers' commands sent a few
//! microseconds apart (Redis' own suite does this) were read in the other order 15 times in 100
//! on this machine. The kernel stamps each packet as it arrives, before any thread runs.

use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::Interest;
use tokio::net::TcpStream;

/// Since the Unix epoch (the kernel stamps with the real-time clock). Ordering arrivals is all
/// it is for: a clock step between two arrivals can misorder them, nothing worse.
pub type Arrival = Duration;

/// Ask the kernel to stamp what `stream` receives. Without it (an error here), [`read`] answers
/// the time it read instead. Linux turns stamping on for the whole machine lazily, from a work
/// queue, when the first socket asks: packets that arrive in the meantime carry no stamp and
/// are stamped when read, which can misorder them; nothing worse. (In the test below, the
/// machine's only stamping process: its first packet came unstamped, one 10 ms later stamped,
/// in every run.)
pub fn stamp_arrivals(stream: &TcpStream) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid descriptor and a `c_int` option value of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Read into `buf` as `AsyncReadExt::read` does (0 bytes: the peer closed), and say when the
/// last of the bytes read arrived: the kernel's stamp, or now if it gave none.
pub async fn read(stream: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Arrival)> {
    let (n, stamp) = stream
        .async_io(Interest::READABLE, || receive(stream, buf))
        .await?;
    let now = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
    };
    Ok((n, stamp.unwrap_or_else(now)))
}

/// One `recvmsg`: the bytes read and the kernel's stamp of the last of them, if it gave one.
fn receive(stream: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Option<Arrival>)> {
    // Room for one `SCM_TIMESTAMPNS` message (a timespec) and some slack, aligned for cmsghdr.
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: zeroed msghdr is valid (no name, no iovecs, no control); the fields set below
    // point at live buffers of the lengths given.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `msg` describes buffers that outlive the call.
    let n = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within
    // `msg_controllen`; a timestamp message's data is a timespec (read unaligned).
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                if let (Ok(secs), Ok(nanos)) = (u64::try_from(ts.tv_sec), u32::try_from(ts.tv_nsec))
                {
                    if nanos < 1_000_000_000 {
                        stamp = Some(Duration::new(secs, nanos));
                    }
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, stamp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    #[tokio::test]
    async fn bytes_read_second_that_arrived_first_are_stamped_first() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut first = TcpStream::connect(addr).await.unwrap();
        let (first_in, _) = listener.accept().await.unwrap();
        let mut second = TcpStream::connect(addr).await.unwrap();
        let (second_in, _) = listener.accept().await.unwrap();
        stamp_arrivals(&first_in).unwrap();
        stamp_arrivals(&second_in).unwrap();
        // Wait until the kernel stamps at all (see `stamp_arrivals`): CI failed here once when
        // "one" arrived before stamping was on and was stamped when read, after "two".
        let mut buf = [0u8; 16];
        let mut stamped = false;
        for _ in 0..500 {
            first.write_all(b"probe").await.unwrap();
            let (n, stamp) = first_in
                .async_io(Interest::READABLE, || receive(&first_in, &mut buf))
                .await
                .unwrap();
            assert_eq!(&buf[..n], b"probe");
            if stamp.is_some() {
                stamped = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            stamped,
            "the kernel never stamped a received packet (SO_TIMESTAMPNS)"
        );
        first.write_all(b"one").await.unwrap();
        // Stamps have nanoseconds but clocks may be coarse: arrivals apart.
        tokio::time::sleep(Duration::from_millis(20)).await;
        second.write_all(b"two").await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Read in the other order, as a busy runtime may.
        let (n, second_at) = read(&second_in, &mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"two");
        let (n, first_at) = read(&first_in, &mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"one");
        assert!(first_at < second_at, "{first_at:?} then {second_at:?}");
        drop(first);
        let (n, _) = read(&first_in, &mut buf).await.unwrap();
        assert_eq!(n, 0, "a closed peer reads as 0 bytes");
    }
}
