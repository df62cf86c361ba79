//! The MPI layer's software cost of a message, per side, as a table in
//! the message's size: what `fsin qemu --calibrate`
//! measures on the user's own guests and writes as a profile
//! (`mpi_costs`, docs/model.md, "Replaying an MPI-level trace").
//!
//! Between two points of the table a message's cost is interpolated
//! linearly in its bytes; below the first point it is the first point's,
//! beyond the last it follows the last two points' slope (never falling).
//! An empty table is the straight line of the `mpi_message_ns` and
//! `mpi_byte_ps` keys.
//!
//! The table does not interpolate across Open MPI's switch from eager
//! sends to rendezvous: a message below the eager limit is costed from
//! the points below it alone, one at or beyond it from the points at or
//! beyond it (a side without points takes the whole table). Open MPI
//! sends eagerly only what fits the limit with its largest header
//! (`ompi/mca/pml/ob1/pml_ob1_sendreq.h`: `size <= btl_eager_limit -
//! sizeof(mca_pml_ob1_hdr_t)`), so a point measured at the limit itself
//! (65,536 bytes) went by rendezvous. Beyond the last point below the
//! limit, an eager message's cost follows those points' slope (never
//! falling), but never above the line from that point to the first one
//! at the limit (a message costs no less as it grows, and a rendezvous
//! one no less than an eager one of its size). CG on 4 guests at size
//! 8192, whose ranks send 58 KB to each of three peers at once, replayed
//! 10.4% late when such messages took the sender's cost of the limit's
//! point, where the live sender's is small (2026-12-06: +1.9% with the
//! rule; `fsin-pingpong`'s 60,000-byte round trips +9.0% then, +4.7%).
//!
//! Of the receiver's cost, a part is paid after the message's last
//! segment is in (its tail: the matching, and the copy out of the
//! transport's buffers once the message is whole), the rest as each
//! segment comes. A point may give its tail (a fourth number); where it
//! does not, the tail is the first point's receive cost, which every
//! message pays. A stream's pace hardly depends on the tail, a round
//! trip's time does: the calibration fits it where the receive cost
//! alone cannot give both.
//!
//! Of the sender's cost, likewise, a part may be paid after the last
//! segment has gone (its tail, a fifth number: the return from the
//! socket's write and the MPI call, which the segments do not wait for);
//! the rest is paid before the first segment up to the first point's
//! send cost, and what is left of it spread over the segments. Where a
//! point gives no send tail it is 0 (all before the segments go). A
//! stream's sender pays its whole cost per message whatever the tail; a
//! round trip's next message waits for the reply, not for the tail.

use std::fmt;

/// The most points a cost table holds.
pub const MAX_COST_POINTS: usize = 64;

/// Which side of a message pays a cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The sender: before the message's segments leave.
    Send,
    /// The receiver: after they are in.
    Recv,
}

/// The software cost of a message of `bytes` (the application's bytes,
/// without the MPI layer's header) on each side, nanoseconds of guest
/// time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostPoint {
    /// The message's size, bytes.
    pub bytes: u64,
    /// The sender's cost, ns of guest time.
    pub send_ns: u64,
    /// The receiver's cost, ns of guest time.
    pub recv_ns: u64,
    /// Of `recv_ns`, the part paid after the last segment is in, ns of
    /// guest time (module doc); `None`: the first point's `recv_ns`.
    pub recv_tail_ns: Option<u64>,
    /// Of `send_ns`, the part paid after the last segment has gone, ns of
    /// guest time (module doc); `None`: 0.
    pub send_tail_ns: Option<u64>,
}

impl CostPoint {
    fn side(&self, side: Side) -> f64 {
        match side {
            Side::Send => self.send_ns as f64,
            Side::Recv => self.recv_ns as f64,
        }
    }

    /// Its receive tail, ns: the one given, else `least` (the first
    /// point's receive cost), never above its receive cost.
    fn recv_tail(&self, least: u64) -> u64 {
        self.recv_tail_ns.unwrap_or(least).min(self.recv_ns)
    }
}

/// A cost table that cannot be read (`mpi_costs`'s value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CostsError {
    /// A point is not `BYTES:SEND_NS:RECV_NS[:RECV_TAIL_NS[:SEND_TAIL_NS]]`
    /// of integers.
    #[error("point {index} (`{text}`) is not BYTES:SEND_NS:RECV_NS[:RECV_TAIL_NS[:SEND_TAIL_NS]], three to five integers")]
    Point {
        /// The point's place in the list, from 0.
        index: usize,
        /// The point as given.
        text: String,
    },
    /// A point's size is not above the one before it.
    #[error("point {index}: {bytes} bytes is not more than the point before's")]
    Order {
        /// The point's place in the list, from 0.
        index: usize,
        /// Its size, bytes.
        bytes: u64,
    },
    /// More than [`MAX_COST_POINTS`] points.
    #[error("{count} points: at most {MAX_COST_POINTS}")]
    TooMany {
        /// The points given.
        count: usize,
    },
    /// A cost beyond an hour of guest time.
    #[error("point {index}: a cost of {ns} ns is more than an hour")]
    TooLarge {
        /// The point's place in the list, from 0.
        index: usize,
        /// The cost, ns of guest time.
        ns: u64,
    },
    /// A point's tail is more than its cost on the same side.
    #[error(
        "point {index}: a {side} tail of {tail_ns} ns is more than its {side} cost, {cost_ns} ns"
    )]
    Tail {
        /// The point's place in the list, from 0.
        index: usize,
        /// `receive` or `send`.
        side: &'static str,
        /// The tail, ns of guest time.
        tail_ns: u64,
        /// The side's cost, ns of guest time.
        cost_ns: u64,
    },
}

/// The costs per message size, ordered by size (empty: the straight line
/// of [`super::lower::MpiModel`]'s `message_ns` and `byte_ps`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CostTable {
    points: Vec<CostPoint>,
}

impl CostTable {
    /// A table of `points`, in increasing size.
    ///
    /// # Errors
    /// [`CostsError`]: sizes out of order, too many points, a cost over an
    /// hour, a tail above its point's cost on the same side.
    pub fn new(points: Vec<CostPoint>) -> Result<CostTable, CostsError> {
        if points.len() > MAX_COST_POINTS {
            return Err(CostsError::TooMany {
                count: points.len(),
            });
        }
        for (index, p) in points.iter().enumerate() {
            if index > 0 && p.bytes <= points[index - 1].bytes {
                return Err(CostsError::Order {
                    index,
                    bytes: p.bytes,
                });
            }
            let ns = p.send_ns.max(p.recv_ns);
            if ns > 3_600_000_000_000 {
                return Err(CostsError::TooLarge { index, ns });
            }
            let tails = [
                ("receive", p.recv_tail_ns, p.recv_ns),
                ("send", p.send_tail_ns, p.send_ns),
            ];
            for (side, tail, cost_ns) in tails {
                if let Some(tail_ns) = tail.filter(|&t| t > cost_ns) {
                    return Err(CostsError::Tail {
                        index,
                        side,
                        tail_ns,
                        cost_ns,
                    });
                }
            }
        }
        Ok(CostTable { points })
    }

    /// Reads `BYTES:SEND_NS:RECV_NS[:RECV_TAIL_NS[:SEND_TAIL_NS]][,...]`
    /// (empty: no table).
    ///
    /// # Errors
    /// As [`CostTable::new`], and [`CostsError::Point`] for a point that
    /// is not three to five integers.
    pub fn parse(text: &str) -> Result<CostTable, CostsError> {
        if text.trim().is_empty() {
            return Ok(CostTable::default());
        }
        let mut points = Vec::new();
        for (index, part) in text.split(',').map(str::trim).enumerate() {
            let bad = || CostsError::Point {
                index,
                text: part.chars().take(40).collect(),
            };
            let f: Result<Vec<u64>, _> = part.split(':').map(|x| x.trim().parse()).collect();
            let (bytes, send_ns, recv_ns, tail, send_tail) = match f.as_deref() {
                Ok(&[b, s, r]) => (b, s, r, None, None),
                Ok(&[b, s, r, t]) => (b, s, r, Some(t), None),
                Ok(&[b, s, r, t, u]) => (b, s, r, Some(t), Some(u)),
                _ => return Err(bad()),
            };
            points.push(CostPoint {
                bytes,
                send_ns,
                recv_ns,
                recv_tail_ns: tail,
                send_tail_ns: send_tail,
            });
        }
        CostTable::new(points)
    }

    /// The points, in increasing size.
    pub fn points(&self) -> &[CostPoint] {
        &self.points
    }

    /// Whether the table is empty (the straight line applies).
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The cost on `side` of a message of `bytes`, ns, with Open MPI's
    /// eager limit at `eager_limit` bytes (module doc); 0 for an empty
    /// table.
    pub fn ns(&self, side: Side, bytes: u64, eager_limit: u64) -> f64 {
        self.along(bytes, eager_limit, |p| p.side(side))
    }

    /// Of the receive cost of a message of `bytes`, the part paid after
    /// its last segment is in, ns, with the eager limit at `eager_limit`
    /// bytes (module doc); 0 for an empty table.
    pub fn recv_tail_ns(&self, bytes: u64, eager_limit: u64) -> f64 {
        let least = self.points.first().map_or(0, |p| p.recv_ns);
        let tail = |p: &CostPoint| p.recv_tail(least) as f64;
        self.along(bytes, eager_limit, tail)
            .min(self.ns(Side::Recv, bytes, eager_limit))
    }

    /// Of the send cost of a message of `bytes`, the part paid after its
    /// last segment has gone, ns, with the eager limit at `eager_limit`
    /// bytes (module doc); 0 for an empty table.
    pub fn send_tail_ns(&self, bytes: u64, eager_limit: u64) -> f64 {
        let tail = |p: &CostPoint| p.send_tail_ns.unwrap_or(0).min(p.send_ns) as f64;
        self.along(bytes, eager_limit, tail)
            .min(self.ns(Side::Send, bytes, eager_limit))
    }

    /// `value` of the points on the side of the eager limit (at
    /// `eager_limit` bytes) that `bytes` is on, interpolated at `bytes`
    /// (module doc).
    fn along(&self, bytes: u64, eager_limit: u64, value: impl Fn(&CostPoint) -> f64) -> f64 {
        let eager = self.points.partition_point(|q| q.bytes < eager_limit);
        // The points on `bytes`'s side (the whole table where that side
        // has none), and for an eager message the first point at the
        // limit, which bounds it.
        let (p, limit_point) = if bytes < eager_limit && eager > 0 {
            (&self.points[..eager], self.points.get(eager))
        } else if bytes >= eager_limit && eager < self.points.len() {
            (&self.points[eager..], None)
        } else {
            (&self.points[..], None)
        };
        let Some(first) = p.first() else {
            return 0.0;
        };
        if bytes <= first.bytes {
            return value(first);
        }
        // The first point at or above `bytes`, after the first point.
        let k = p.partition_point(|q| q.bytes < bytes);
        if let Some(b) = p.get(k) {
            let a = &p[k - 1];
            let t = (bytes - a.bytes) as f64 / (b.bytes - a.bytes) as f64;
            return value(a) + t * (value(b) - value(a));
        }
        let last = &p[p.len() - 1];
        let Some(a) = p.len().checked_sub(2).map(|k| &p[k]) else {
            return value(last);
        };
        let slope = ((value(last) - value(a)) / (last.bytes - a.bytes) as f64).max(0.0);
        let beyond = value(last) + slope * (bytes - last.bytes) as f64;
        // An eager message costs no more than the line to the first
        // point at the limit, which went by rendezvous.
        match limit_point {
            Some(b) => {
                let t = (bytes - last.bytes) as f64 / (b.bytes - last.bytes) as f64;
                beyond.min(value(last) + t * (value(b) - value(last)))
            }
            None => beyond,
        }
    }
}

impl fmt::Display for CostTable {
    /// As [`CostTable::parse`] reads it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, p) in self.points.iter().enumerate() {
            if k > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}:{}:{}", p.bytes, p.send_ns, p.recv_ns)?;
            match (p.recv_tail_ns, p.send_tail_ns) {
                (Some(t), None) => write!(f, ":{t}")?,
                (_, Some(u)) => write!(f, ":{}:{u}", p.recv_tail(self.points[0].recv_ns))?,
                (None, None) => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An eager limit beyond every size: the whole table on one side.
    const NONE: u64 = u64::MAX;

    fn table(text: &str) -> CostTable {
        CostTable::parse(text).unwrap()
    }

    /// Costs by hand: 100 ns at 0 bytes, 300 at 1,000, 400 at 2,000 on
    /// the sending side.
    #[test]
    fn costs_are_interpolated_between_points_and_extended_beyond() {
        let t = table("0:100:50, 1000:300:150, 2000:400:150");
        assert_eq!(t.ns(Side::Send, 0, NONE), 100.0);
        assert_eq!(t.ns(Side::Send, 500, NONE), 200.0);
        assert_eq!(t.ns(Side::Send, 1500, NONE), 350.0);
        assert_eq!(t.ns(Side::Send, 2000, NONE), 400.0);
        // Beyond: 0.1 ns a byte, the last stretch's slope.
        assert_eq!(t.ns(Side::Send, 4000, NONE), 600.0);
        assert_eq!(t.ns(Side::Recv, 250, NONE), 75.0);
        assert_eq!(t.ns(Side::Recv, 9000, NONE), 150.0);
        // Below the first point: the first point's cost.
        let t = table("100:10:20");
        assert_eq!(t.ns(Side::Send, 0, NONE), 10.0);
        assert_eq!(t.ns(Side::Recv, 1 << 20, NONE), 20.0);
        assert_eq!(CostTable::default().ns(Side::Send, 5, NONE), 0.0);
    }

    /// Across the eager limit (1,000 bytes here), by hand: a message
    /// below it takes the points below (100 ns at 0 bytes, 300 at 500:
    /// 400 at 750 and 450 at 875 by their slope), unless the line to the
    /// limit's point is lower; one at or beyond it the points there (900
    /// at 1,000, 1,000 at 2,000); with no point below the limit, the
    /// whole table.
    #[test]
    fn costs_are_not_interpolated_across_the_eager_limit() {
        let t = table("0:100:50, 500:300:50, 1000:900:400, 2000:1000:500");
        assert_eq!(t.ns(Side::Send, 750, 1000), 400.0);
        assert_eq!(t.ns(Side::Send, 750, NONE), 600.0);
        assert_eq!(t.ns(Side::Send, 875, 1000), 450.0);
        assert_eq!(t.ns(Side::Send, 1000, 1000), 900.0);
        assert_eq!(t.ns(Side::Send, 1500, 1000), 950.0);
        assert_eq!(t.ns(Side::Recv, 900, 1000), 50.0);
        // A side never falls beyond its last point.
        let t = table("0:100:50, 500:80:60, 1000:900:400");
        assert_eq!(t.ns(Side::Send, 900, 1000), 80.0);
        // Nor does an eager message cost more than the line to the
        // limit's point: 325 at 750 (300 to 350), not 400.
        let t = table("0:100:50, 500:300:50, 1000:350:400");
        assert_eq!(t.ns(Side::Send, 750, 1000), 325.0);
        // Tails alike: the receive tail below the limit is the first
        // point's cost (none given), at it the point's own.
        let t = table("0:100:50, 500:300:60, 1000:900:400:300");
        assert_eq!(t.recv_tail_ns(800, 1000), 50.0);
        assert_eq!(t.recv_tail_ns(1000, 1000), 300.0);
        let only = table("1000:900:400, 2000:1000:500");
        assert_eq!(only.ns(Side::Send, 10, 1000), 900.0);
    }

    /// Receive tails by hand: none given, every size's is the first
    /// point's receive cost (50); 250 given at 1,000 bytes, 150 at 500
    /// (halfway from 50), beyond 1,000 bytes the slope of 0.2 ns a byte,
    /// never above the receive cost.
    #[test]
    fn receive_tails_are_the_first_points_cost_unless_given() {
        let t = table("0:100:50, 1000:300:300");
        assert_eq!(t.recv_tail_ns(0, NONE), 50.0);
        assert_eq!(t.recv_tail_ns(5000, NONE), 50.0);
        let t = table("0:100:50, 1000:300:300:250");
        assert_eq!(t.recv_tail_ns(500, NONE), 150.0);
        assert_eq!(t.recv_tail_ns(2000, NONE), 450.0);
        assert_eq!(t.ns(Side::Recv, 2000, NONE), 550.0);
        let t = table("0:100:50, 1000:300:300:300, 2000:300:300:300");
        assert_eq!(t.recv_tail_ns(1500, NONE), 300.0);
        assert_eq!(CostTable::default().recv_tail_ns(9, NONE), 0.0);
    }

    /// Send tails by hand: none given, 0; 300 given at 1,000 bytes, 150
    /// at 500 (halfway from 0), never above the send cost.
    #[test]
    fn send_tails_are_nothing_unless_given() {
        let t = table("0:100:50, 1000:300:300");
        assert_eq!(t.send_tail_ns(500, NONE), 0.0);
        let t = table("0:100:50, 1000:300:300:50:300");
        assert_eq!(t.send_tail_ns(500, NONE), 150.0);
        assert_eq!(t.send_tail_ns(1000, NONE), 300.0);
        assert_eq!(t.send_tail_ns(2000, NONE), 500.0);
        assert_eq!(t.ns(Side::Send, 2000, NONE), 500.0);
        assert_eq!(CostTable::default().send_tail_ns(9, NONE), 0.0);
    }

    /// A table that falls inside follows it, and does not fall beyond its
    /// last point.
    #[test]
    fn a_falling_table_never_falls_beyond_its_last_point() {
        let t = table("0:400:400,1000:200:200");
        assert_eq!(t.ns(Side::Send, 500, NONE), 300.0);
        assert_eq!(t.ns(Side::Send, 5000, NONE), 200.0);
    }

    #[test]
    fn tables_print_as_they_are_read_and_bad_ones_are_named() {
        let text = "8:76500:80000,1448:90000:95000";
        assert_eq!(table(text).to_string(), text);
        assert!(table("").is_empty());
        assert_eq!(
            CostTable::parse("8:1:2,x"),
            Err(CostsError::Point {
                index: 1,
                text: "x".into()
            })
        );
        assert_eq!(
            CostTable::parse("8:1:2,8:3:4"),
            Err(CostsError::Order { index: 1, bytes: 8 })
        );
        assert!(matches!(
            CostTable::parse("8:1:2:1:1:1"),
            Err(CostsError::Point { index: 0, .. })
        ));
        assert_eq!(
            CostTable::parse("8:1:2:3"),
            Err(CostsError::Tail {
                index: 0,
                side: "receive",
                tail_ns: 3,
                cost_ns: 2
            })
        );
        assert_eq!(
            CostTable::parse("8:5:2:2:6"),
            Err(CostsError::Tail {
                index: 0,
                side: "send",
                tail_ns: 6,
                cost_ns: 5
            })
        );
        let text = "8:76500:80000,65536:900000:950000:300000";
        assert_eq!(table(text).to_string(), text);
        let text = "8:76500:80000,512:90000:78000:78000:20000,65536:900000:950000:300000";
        assert_eq!(table(text).to_string(), text);
        // A send tail after no receive tail: the receive tail it stands
        // for (the first point's receive cost) is written.
        let t = CostTable::new(vec![
            CostPoint {
                bytes: 8,
                send_ns: 10,
                recv_ns: 20,
                recv_tail_ns: None,
                send_tail_ns: None,
            },
            CostPoint {
                bytes: 64,
                send_ns: 30,
                recv_ns: 40,
                recv_tail_ns: None,
                send_tail_ns: Some(5),
            },
        ])
        .unwrap();
        assert_eq!(t.to_string(), "8:10:20,64:30:40:20:5");
        let many: Vec<String> = (0..65).map(|k| format!("{k}:1:1")).collect();
        assert!(matches!(
            CostTable::parse(&many.join(",")),
            Err(CostsError::TooMany { .. })
        ));
        assert!(matches!(
            CostTable::parse("0:4000000000000:0"),
            Err(CostsError::TooLarge { index: 0, .. })
        ));
    }
}
