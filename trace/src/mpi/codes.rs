//! The record kinds of the MPI library's streams: the `op` byte of
//! `mpi-trace/fsin-mpitrace.c`'s records and their flags
//! (docs/contracts.md, "MPI-level traces", gives each one's fields). One
//! table for both sides: a test reads the C library's header
//! (`mpi-trace/fsin-mpitrace.h`), its `enum` and `#define`s, and finds
//! these names with these values.

/// A blocking send (`MPI_Send`, `MPI_Ssend` with [`FLAG_SYNC`]).
pub const OP_SEND: u8 = 1;
/// A non-blocking send that starts request `req`.
pub const OP_ISEND: u8 = 2;
/// A blocking receive: peer, tag and bytes as received.
pub const OP_RECV: u8 = 3;
/// A non-blocking receive as posted (peer and tag -1: any).
pub const OP_IRECV: u8 = 4;
/// `MPI_Sendrecv`: sent to `peer`, received from `root`, `bytes2` bytes
/// with tag `req`.
pub const OP_SENDRECV: u8 = 5;
/// The completion calls, [`OP_WAIT`] to [`OP_WAITSOME`]: `bytes` requests
/// passed, `bytes2` completed; an [`OP_DONE`] record follows per
/// completed request.
pub const OP_WAIT: u8 = 6;
/// `MPI_Waitall` (see [`OP_WAIT`]).
pub const OP_WAITALL: u8 = 7;
/// `MPI_Waitany` (see [`OP_WAIT`]).
pub const OP_WAITANY: u8 = 8;
/// `MPI_Test` (see [`OP_WAIT`]).
pub const OP_TEST: u8 = 9;
/// `MPI_Testall` (see [`OP_WAIT`]).
pub const OP_TESTALL: u8 = 10;
/// `MPI_Testany` (see [`OP_WAIT`]).
pub const OP_TESTANY: u8 = 11;
/// `MPI_Waitsome` (see [`OP_WAIT`]).
pub const OP_WAITSOME: u8 = 12;
/// `MPI_Probe`, `MPI_Iprobe`: time inside MPI, nothing moved.
pub const OP_PROBE: u8 = 13;
/// Request `req` completed: peer, tag, bytes; [`FLAG_RECV`]: a receive.
pub const OP_DONE: u8 = 16;
/// The collectives, [`OP_BARRIER`] to [`OP_SCATTERV`] in the order of
/// [`super::Collective::ALL`]: root (a world rank, -1: none), bytes this
/// rank sends and bytes2 it receives per block.
pub const OP_BARRIER: u8 = 32;
/// `MPI_Bcast` (see [`OP_BARRIER`]).
pub const OP_BCAST: u8 = 33;
/// `MPI_Reduce` (see [`OP_BARRIER`]).
pub const OP_REDUCE: u8 = 34;
/// `MPI_Allreduce` (see [`OP_BARRIER`]).
pub const OP_ALLREDUCE: u8 = 35;
/// `MPI_Alltoall` (see [`OP_BARRIER`]).
pub const OP_ALLTOALL: u8 = 36;
/// `MPI_Alltoallv` (see [`OP_BARRIER`]).
pub const OP_ALLTOALLV: u8 = 37;
/// `MPI_Allgather` (see [`OP_BARRIER`]).
pub const OP_ALLGATHER: u8 = 38;
/// `MPI_Allgatherv` (see [`OP_BARRIER`]).
pub const OP_ALLGATHERV: u8 = 39;
/// `MPI_Gather` (see [`OP_BARRIER`]).
pub const OP_GATHER: u8 = 40;
/// `MPI_Gatherv` (see [`OP_BARRIER`]).
pub const OP_GATHERV: u8 = 41;
/// `MPI_Scatter` (see [`OP_BARRIER`]).
pub const OP_SCATTER: u8 = 42;
/// `MPI_Scatterv` (see [`OP_BARRIER`]).
pub const OP_SCATTERV: u8 = 43;
/// After a v-collective, per peer: bytes sent to it, bytes2 received
/// from it.
pub const OP_VEC: u8 = 48;
/// A communicator made: `comm` the parent, `req` the new one's id
/// ([`NO_COMM`]: `MPI_COMM_NULL`); [`FLAG_SYNC`] set: by a split.
pub const OP_COMM_NEW: u8 = 64;

/// Flag bit 0: a synchronous send (`MPI_Ssend`, `MPI_Issend`), or a
/// communicator made by `MPI_Comm_split`.
pub const FLAG_SYNC: u8 = 1;
/// Flag bit 1 of an [`OP_DONE`] record: the request was a receive.
pub const FLAG_RECV: u8 = 2;
/// No communicator (`MPI_COMM_NULL`).
pub const NO_COMM: u32 = u32::MAX;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record kind by its name in the C library, in its order.
    const OPS: [(&str, u8); 28] = [
        ("OP_SEND", OP_SEND),
        ("OP_ISEND", OP_ISEND),
        ("OP_RECV", OP_RECV),
        ("OP_IRECV", OP_IRECV),
        ("OP_SENDRECV", OP_SENDRECV),
        ("OP_WAIT", OP_WAIT),
        ("OP_WAITALL", OP_WAITALL),
        ("OP_WAITANY", OP_WAITANY),
        ("OP_TEST", OP_TEST),
        ("OP_TESTALL", OP_TESTALL),
        ("OP_TESTANY", OP_TESTANY),
        ("OP_WAITSOME", OP_WAITSOME),
        ("OP_PROBE", OP_PROBE),
        ("OP_DONE", OP_DONE),
        ("OP_BARRIER", OP_BARRIER),
        ("OP_BCAST", OP_BCAST),
        ("OP_REDUCE", OP_REDUCE),
        ("OP_ALLREDUCE", OP_ALLREDUCE),
        ("OP_ALLTOALL", OP_ALLTOALL),
        ("OP_ALLTOALLV", OP_ALLTOALLV),
        ("OP_ALLGATHER", OP_ALLGATHER),
        ("OP_ALLGATHERV", OP_ALLGATHERV),
        ("OP_GATHER", OP_GATHER),
        ("OP_GATHERV", OP_GATHERV),
        ("OP_SCATTER", OP_SCATTER),
        ("OP_SCATTERV", OP_SCATTERV),
        ("OP_VEC", OP_VEC),
        ("OP_COMM_NEW", OP_COMM_NEW),
    ];

    /// The C library's header of codes, as the guest image compiles it.
    const C: &str = include_str!("../../../mpi-trace/fsin-mpitrace.h");

    /// `NAME = VALUE` of the first `enum { ... };` of `text`, in order.
    fn c_enum(text: &str) -> Vec<(String, u64)> {
        let start = text.find("enum {").expect("an enum") + "enum {".len();
        let body = &text[start..start + text[start..].find("};").expect("its end")];
        let mut out = Vec::new();
        for line in body.lines() {
            // Comments run over lines: only `NAME = VALUE,` starts one.
            let code = line.split("/*").next().unwrap_or_default().trim();
            if let Some((name, value)) = code.trim_end_matches(',').split_once('=') {
                let value = value.trim();
                if let Ok(v) = value.parse() {
                    out.push((name.trim().to_string(), v));
                }
            }
        }
        out
    }

    /// The value of `#define NAME VALUE` in `text`.
    fn c_define(text: &str, name: &str) -> String {
        let head = format!("#define {name} ");
        let line = (text.lines())
            .find(|l| l.starts_with(&head))
            .unwrap_or_else(|| panic!("no {head}"));
        line[head.len()..].trim().to_string()
    }

    #[test]
    fn the_c_library_writes_the_same_codes() {
        let theirs = c_enum(C);
        let ours: Vec<(String, u64)> = (OPS.iter())
            .map(|&(n, v)| (n.to_string(), u64::from(v)))
            .collect();
        assert_eq!(theirs, ours);
        assert_eq!(c_define(C, "FLAG_SYNC"), FLAG_SYNC.to_string());
        assert_eq!(c_define(C, "FLAG_RECV"), FLAG_RECV.to_string());
        assert_eq!(c_define(C, "NO_COMM"), format!("{NO_COMM:#x}u"));
    }

    #[test]
    fn the_enum_reader_sees_a_change() {
        let changed = C.replace("OP_PROBE = 13", "OP_PROBE = 14");
        assert!(c_enum(&changed).contains(&("OP_PROBE".into(), 14)));
        assert_ne!(c_enum(&changed), c_enum(C));
    }
}
