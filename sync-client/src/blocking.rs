//! The client API without async: each call blocks the calling thread (for
//! node simulators with their own event loop, and for the C ABI).

use fsin_proto::v1 as pb;

use crate::{ClientError, ServerEvent};

/// A [`crate::NodeLink`] driven by its own single-threaded runtime.
pub struct NodeLink {
    rt: tokio::runtime::Runtime,
    link: crate::NodeLink,
}

impl NodeLink {
    /// Connects and attaches; see [`crate::NodeLink::attach`].
    ///
    /// # Errors
    /// As [`crate::NodeLink::attach`]; also when the runtime cannot start.
    pub fn attach(
        url: &str,
        client_name: &str,
        nodes: Vec<pb::NodeSpec>,
    ) -> Result<Self, ClientError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClientError::Protocol(format!("cannot start a runtime: {e}")))?;
        let mut link = rt.block_on(crate::NodeLink::attach(url, client_name, nodes))?;
        // Every call blocks anyway: waiting in a futex costs nothing more.
        link.use_shared_memory();
        Ok(NodeLink { rt, link })
    }

    /// The server's Welcome.
    pub fn welcome(&self) -> &pb::Welcome {
        &self.link.welcome
    }

    /// See [`crate::NodeLink::send_frame`].
    ///
    /// # Errors
    /// [`ClientError::Closed`] once the stream is gone.
    pub fn send_frame(&self, node: u32, node_cycle: u64, data: Vec<u8>) -> Result<(), ClientError> {
        self.link.send_frame(node, node_cycle, data)
    }

    /// See [`crate::NodeLink::slice_done`].
    ///
    /// # Errors
    /// [`ClientError::Closed`] once the stream is gone.
    pub fn slice_done(&self, slice: u64, finished: Vec<pb::AppReport>) -> Result<(), ClientError> {
        self.link.slice_done(slice, finished)
    }

    /// See [`crate::NodeLink::detach`].
    ///
    /// # Errors
    /// [`ClientError::Closed`] once the stream is gone.
    pub fn detach(&self, reason: &str) -> Result<(), ClientError> {
        self.link.detach(reason)
    }

    /// Blocks until the server's next message.
    ///
    /// # Errors
    /// As [`crate::NodeLink::next_event`].
    pub fn next_event(&mut self) -> Result<ServerEvent, ClientError> {
        self.rt.block_on(self.link.next_event())
    }
}
