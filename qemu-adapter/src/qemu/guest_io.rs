//! A guest's sockets: its NIC's `-netdev stream` and, in lock-step, its
//! plugin's socket, turned into [`GuestEvent`]s; and the start of its QEMU.

use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use fsin_frames::{MAX_FRAME_BYTES, MIN_FRAME_BYTES};
use fsin_qemu_wire::FromPlugin;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, UnixListener};
use tokio::process::Child;
use tokio::sync::mpsc;

use super::args::Args;
use super::error::{io, QemuError};
use super::launch::{qemu_command, RunFiles};
use crate::checkpoint;

/// Something a guest did.
pub(super) enum GuestEvent {
    /// The guest's NIC connected; frames to it go to this writer.
    Connected(usize, OwnedWriteHalf),
    /// A frame guest `i` sent; in lock-step with the guest time (ns) of the
    /// instruction that sent it.
    Frame(usize, Option<u64>, Vec<u8>),
    /// The NIC stream broke (bad length, read error).
    NicError(usize, String),
    /// The guest could not be restored from its checkpoint file.
    RestoreFailed(usize, checkpoint::MigrationError),
    Console(usize, String),
    /// Lock-step: bytes of plugin messages decoded from guest `i`'s socket,
    /// after the events of those messages.
    Read(usize, u64),
    /// Lock-step: guest `i`'s plugin was the last to reach the end of this
    /// board round (`fsin_qemu_wire::FromPlugin::AllReached`).
    AllReached(usize, u64),
    /// Lock-step: frames delivered to guest `i` at guest time (ns) ended
    /// its idle time, which began at the second (`FromPlugin::Woke`).
    Woke(usize, u64, u64),
    Exited(usize, std::io::Result<ExitStatus>),
}

/// A `-netdev stream` frame length outside an Ethernet frame's, bytes.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("frame length {0} outside {MIN_FRAME_BYTES}..={MAX_FRAME_BYTES} bytes")]
pub(super) struct FrameLength(pub(super) usize);

/// Complete `-netdev stream` frames (4-byte big-endian length, frame) at
/// the front of `buf`, removed from it.
///
/// # Errors
/// A length outside 14..=9018 bytes.
pub(super) fn take_frames(buf: &mut Vec<u8>) -> Result<Vec<Vec<u8>>, FrameLength> {
    let mut frames = Vec::new();
    let mut at = 0;
    while buf.len() - at >= 4 {
        let n = u32::from_be_bytes(buf[at..at + 4].try_into().expect("4 bytes")) as usize;
        if !(MIN_FRAME_BYTES..=MAX_FRAME_BYTES).contains(&n) {
            return Err(FrameLength(n));
        }
        if buf.len() - at - 4 < n {
            break;
        }
        frames.push(buf[at + 4..at + 4 + n].to_vec());
        at += 4 + n;
    }
    buf.drain(..at);
    Ok(frames)
}

/// Appends to `buf` all that `try_read` has ready, without waiting;
/// `Ok(false)` when the stream ended.
pub(super) fn read_ready(
    mut try_read: impl FnMut(&mut [u8]) -> std::io::Result<usize>,
    buf: &mut Vec<u8>,
) -> std::io::Result<bool> {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match try_read(&mut chunk) {
            Ok(0) => return Ok(false),
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(true),
            Err(e) => return Err(e),
        }
    }
}

/// Reads what guest `i`'s NIC has sent so far without waiting and forwards
/// its frames; `false` when the stream ended or broke.
pub(super) fn drain_nic(
    i: usize,
    rd: &tokio::net::tcp::OwnedReadHalf,
    buf: &mut Vec<u8>,
    tx: &mpsc::UnboundedSender<GuestEvent>,
) -> bool {
    match read_ready(|chunk| rd.try_read(chunk), buf) {
        Ok(true) => {}
        Ok(false) => return false, // QEMU exited, which its watcher reports
        Err(e) => {
            let _ = tx.send(GuestEvent::NicError(i, format!("read failed: {e}")));
            return false;
        }
    }
    match take_frames(buf) {
        Ok(frames) => frames
            .into_iter()
            .all(|f| tx.send(GuestEvent::Frame(i, None, f)).is_ok()),
        Err(e) => {
            let _ = tx.send(GuestEvent::NicError(i, e.to_string()));
            false
        }
    }
}

/// Reads what guest `i`'s plugin has written so far without waiting and
/// forwards its messages ([`GuestEvent::Frame`] with the guest time,
/// [`GuestEvent::AllReached`]), then [`GuestEvent::Read`] with their bytes;
/// `false` when the socket ended, broke or carried a bad message.
pub(super) fn drain_plugin(
    i: usize,
    rd: &tokio::net::unix::OwnedReadHalf,
    buf: &mut Vec<u8>,
    tx: &mpsc::UnboundedSender<GuestEvent>,
) -> bool {
    let fail = |e: String| {
        let _ = tx.send(GuestEvent::NicError(i, e));
        false
    };
    match read_ready(|chunk| rd.try_read(chunk), buf) {
        Ok(true) => {}
        Ok(false) => return fail("the QEMU plugin closed its socket".into()),
        Err(e) => return fail(format!("lost the QEMU plugin: {e}")),
    }
    let mut at = 0;
    loop {
        let msg = match FromPlugin::decode(&buf[at..]) {
            Ok(Some((msg, n))) => {
                at += n;
                msg
            }
            Ok(None) => break,
            Err(e) => return fail(format!("bad message from the QEMU plugin: {e}")),
        };
        let ev = match msg {
            FromPlugin::Sent { at_ns, frame } => {
                if !(MIN_FRAME_BYTES..=MAX_FRAME_BYTES).contains(&frame.len()) {
                    return fail(format!(
                        "frame length {} outside {MIN_FRAME_BYTES}..={MAX_FRAME_BYTES} bytes",
                        frame.len()
                    ));
                }
                GuestEvent::Frame(i, Some(at_ns), frame)
            }
            FromPlugin::AllReached { round } => GuestEvent::AllReached(i, round),
            FromPlugin::Woke {
                at_ns,
                idle_from_ns,
            } => GuestEvent::Woke(i, at_ns, idle_from_ns),
        };
        if tx.send(ev).is_err() {
            return false;
        }
    }
    buf.drain(..at);
    at == 0 || tx.send(GuestEvent::Read(i, at as u64)).is_ok()
}

/// Guest `i`'s sockets: accepts its NIC (and, in lock-step, its plugin),
/// forwards the frames it sends, and in lock-step writes each slice's
/// deliveries received on `slices` to the plugin and forwards what the
/// plugin says ([`drain_plugin`]).
pub(super) async fn guest_io(
    i: usize,
    nic: TcpListener,
    sync: Option<UnixListener>,
    mut slices: mpsc::UnboundedReceiver<Vec<u8>>,
    timeout: Duration,
    tx: mpsc::UnboundedSender<GuestEvent>,
) {
    let fail = |e: String| {
        let _ = tx.send(GuestEvent::NicError(i, e));
    };
    let nic = match tokio::time::timeout(timeout, nic.accept()).await {
        Ok(Ok((sock, _))) => sock,
        Ok(Err(e)) => return fail(format!("accept failed: {e}")),
        Err(_) => return fail(format!("QEMU did not connect its NIC within {timeout:?}")),
    };
    let plugin = match sync {
        None => None,
        Some(l) => match tokio::time::timeout(timeout, l.accept()).await {
            Ok(Ok((sock, _))) => Some(sock.into_split()),
            Ok(Err(e)) => return fail(format!("plugin accept failed: {e}")),
            Err(_) => {
                return fail(format!(
                    "the QEMU plugin did not connect within {timeout:?}"
                ))
            }
        },
    };
    let _ = nic.set_nodelay(true);
    let (rd, wr) = nic.into_split();
    if tx.send(GuestEvent::Connected(i, wr)).is_err() {
        return;
    }
    // Deliveries are written by a task of their own, so that a plugin
    // busy writing frames is always read meanwhile.
    let from_plugin = plugin.map(|(prd, mut pwr)| {
        let fail_tx = tx.clone();
        tokio::spawn(async move {
            while let Some(msgs) = slices.recv().await {
                if let Err(e) = pwr.write_all(&msgs).await {
                    let _ = fail_tx.send(GuestEvent::NicError(
                        i,
                        format!("lost the QEMU plugin: {e}"),
                    ));
                    return;
                }
            }
        });
        prd
    });
    let plugin_readable = || async {
        match &from_plugin {
            Some(p) => p.readable().await,
            None => std::future::pending().await,
        }
    };
    let mut buf = Vec::new();
    let mut plugin_buf = Vec::new();
    loop {
        tokio::select! {
            r = rd.readable() => {
                if r.is_err() || !drain_nic(i, &rd, &mut buf, &tx) {
                    return;
                }
            }
            r = plugin_readable() => {
                let Some(p) = &from_plugin else { return };
                if let Err(e) = r {
                    return fail(format!("lost the QEMU plugin: {e}"));
                }
                if !drain_plugin(i, p, &mut plugin_buf, &tx) {
                    return;
                }
            }
        }
    }
}

/// Starts guest `i`: its NIC listener (and plugin socket in `sync_dir`),
/// QEMU (with the `--run` command file `run`), and the tasks that report
/// what it does; returns where to send each slice's plugin messages.
pub(super) async fn start_guest(
    a: &Args,
    i: usize,
    sync_dir: Option<&Path>,
    files: &RunFiles,
    tx: &mpsc::UnboundedSender<GuestEvent>,
) -> Result<mpsc::UnboundedSender<Vec<u8>>, QemuError> {
    let listener = io(TcpListener::bind("127.0.0.1:0").await, || {
        "cannot listen on loopback".into()
    })?;
    let port = io(listener.local_addr(), || "cannot listen on loopback".into())?.port();
    let sock = sync_dir.map(|d| d.join(format!("guest-{i}.sock")));
    let sync = match &sock {
        Some(p) => Some(io(UnixListener::bind(p), || {
            format!("cannot listen on {}", p.display())
        })?),
        None => None,
    };
    let mut cmd = qemu_command(a, i as u32, port, sock.as_deref(), files)?;
    // A nic-bridge killed outright (SIGKILL: no `kill_on_drop`) takes its
    // QEMUs with it.
    sync_client::signals::die_with_parent(cmd.as_std_mut());
    let mut child: Child = io(cmd.spawn(), || {
        format!(
                "cannot start {} for guest {i} (scripts/install-qemu.sh installs QEMU 10.0; `fsin doctor` checks the machine)",
                a.qemu
            )
    })?;
    let (slices_tx, slices_rx) = mpsc::unbounded_channel();
    let timeout = Duration::from_secs(a.connect_timeout_s);
    tokio::spawn(guest_io(i, listener, sync, slices_rx, timeout, tx.clone()));
    for (pipe, name) in [
        (
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            "console",
        ),
        (
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            "stderr",
        ),
    ] {
        let Some(pipe) = pipe else { continue };
        let con_tx = tx.clone();
        tokio::spawn(async move {
            // Console bytes are the guest's: not necessarily UTF-8.
            let mut pipe = BufReader::new(pipe);
            let mut raw = Vec::new();
            while let Ok(1..) = pipe.read_until(b'\n', &mut raw).await {
                let text = String::from_utf8_lossy(&raw);
                let text = text.trim_end_matches(['\n', '\r']);
                let line = if name == "stderr" {
                    format!("qemu: {text}")
                } else {
                    text.to_string()
                };
                raw.clear();
                if con_tx.send(GuestEvent::Console(i, line)).is_err() {
                    return;
                }
            }
        });
    }
    let exit_tx = tx.clone();
    tokio::spawn(async move {
        let status = child.wait().await;
        let _ = exit_tx.send(GuestEvent::Exited(i, status));
    });
    Ok(slices_tx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsin_qemu_wire::ToPlugin;

    /// Lock-step through the plugin's socket: a slice's deliveries reach
    /// the plugin in order; the frames the guest sends come back with their
    /// guest times, before the round's end ([`GuestEvent::AllReached`]),
    /// and their bytes are counted ([`GuestEvent::Read`]); a frame shorter
    /// than an Ethernet header breaks the stream.
    #[tokio::test]
    async fn the_plugin_socket_carries_frames_both_ways_and_the_round_end_last() {
        use std::io::{Read, Write};
        let nic = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let nic_addr = nic.local_addr().unwrap();
        let dir = std::env::temp_dir().join(format!("fsin-bridge-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("plugin.sock");
        let _ = std::fs::remove_file(&path);
        let sync = UnixListener::bind(&path).unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (slices_tx, slices_rx) = mpsc::unbounded_channel();
        let timeout = Duration::from_secs(5);
        tokio::spawn(guest_io(0, nic, Some(sync), slices_rx, timeout, tx));
        let qemu_nic = std::net::TcpStream::connect(nic_addr).unwrap();
        let mut qemu_plugin = std::os::unix::net::UnixStream::connect(&path).unwrap();
        assert!(matches!(rx.recv().await, Some(GuestEvent::Connected(0, _))));
        let mut msgs = Vec::new();
        ToPlugin::Deliver {
            at_ns: 8_000,
            frame: vec![9; 60],
        }
        .encode(&mut msgs);
        let expected = msgs.clone();
        slices_tx.send(msgs).unwrap();
        let (next_tx, next_rx) = std::sync::mpsc::channel::<()>();
        let vcpu = std::thread::spawn(move || {
            let mut got = vec![0u8; expected.len()];
            qemu_plugin.read_exact(&mut got).unwrap();
            assert_eq!(got, expected);
            let mut out = Vec::new();
            for k in 0..50u8 {
                FromPlugin::Sent {
                    at_ns: 8_000 + 8 * u64::from(k),
                    frame: vec![k; 60],
                }
                .encode(&mut out);
            }
            FromPlugin::AllReached { round: 7 }.encode(&mut out);
            qemu_plugin.write_all(&out).unwrap();
            // Then a frame of 3 bytes in the next slice.
            next_rx.recv().unwrap();
            out.clear();
            FromPlugin::Sent {
                at_ns: 90_000,
                frame: vec![1, 2, 3],
            }
            .encode(&mut out);
            qemu_plugin.write_all(&out).unwrap();
            (qemu_nic, qemu_plugin)
        });
        let (mut frames, mut read) = (0u8, 0);
        loop {
            match tokio::time::timeout(timeout, rx.recv()).await.unwrap() {
                Some(GuestEvent::Frame(0, at, f)) => {
                    assert_eq!(f, vec![frames; 60], "frame {frames}");
                    assert_eq!(at, Some(8_000 + 8 * u64::from(frames)));
                    frames += 1;
                }
                Some(GuestEvent::Read(0, k)) => read += k,
                Some(GuestEvent::AllReached(0, 7)) => break,
                _ => panic!("unexpected event"),
            }
        }
        assert_eq!(frames, 50, "every frame before the round's end");
        while read < 50 * (24 + 60) + 16 {
            match tokio::time::timeout(timeout, rx.recv()).await.unwrap() {
                Some(GuestEvent::Read(0, k)) => read += k,
                _ => panic!("unexpected event"),
            }
        }
        assert_eq!(read, 50 * (24 + 60) + 16, "every byte counted once");
        next_tx.send(()).unwrap();
        match tokio::time::timeout(timeout, rx.recv()).await.unwrap() {
            Some(GuestEvent::NicError(0, e)) => assert!(e.contains("frame length 3"), "{e}"),
            _ => panic!("a 3-byte frame must break the stream"),
        }
        drop(vcpu.join().unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn take_frames_keeps_partial_frames_and_rejects_bad_lengths() {
        let mut buf = Vec::new();
        buf.extend_from_slice(&20u32.to_be_bytes());
        buf.extend_from_slice(&[7; 20]);
        buf.extend_from_slice(&30u32.to_be_bytes());
        buf.extend_from_slice(&[8; 10]);
        assert_eq!(take_frames(&mut buf).unwrap(), vec![vec![7; 20]]);
        assert_eq!(buf.len(), 14, "the partial second frame stays");
        let mut bad = 5u32.to_be_bytes().to_vec();
        bad.extend_from_slice(&[0; 5]);
        assert_eq!(
            take_frames(&mut bad).unwrap_err().to_string(),
            "frame length 5 outside 14..=9018 bytes"
        );
    }
}
