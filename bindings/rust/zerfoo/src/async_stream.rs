//! The `tokio` feature: generation as a `futures_core::Stream` driven on a blocking thread.
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::error::{Error, ErrorCode, Result};
use crate::session::{CancelHandle, GenerateOptions, Generation, Session};

/// Generated text pieces as an async [`Stream`] ([`Session::into_async_stream`]).
///
/// Generation runs on a `tokio` blocking thread through the pull-style API, one piece ahead of
/// the consumer at most a few pieces (a bounded channel). Dropping the stream cancels the
/// generation; [`into_session`](AsyncPieces::into_session) stops it and gives the session back.
pub struct AsyncPieces {
    rx: mpsc::Receiver<Result<String>>,
    cancel: CancelHandle,
    task: Option<JoinHandle<(Session<'static>, Result<Generation>)>>,
}

impl std::fmt::Debug for AsyncPieces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncPieces").finish_non_exhaustive()
    }
}

impl Session<'static> {
    /// Moves the session to a blocking thread and streams the generation's pieces. Must be
    /// called from within a tokio runtime. A prompt error is the stream's only item.
    ///
    /// ```no_run
    /// # async fn demo() -> zerfoo::Result<()> {
    /// use futures_core::Stream;
    /// use std::pin::pin;
    /// # let model = zerfoo::Model::load("m.gguf", &Default::default())?;
    /// let session = model.session_owned(&Default::default())?;
    /// let mut pieces = session.into_async_stream("Hello", zerfoo::GenerateOptions::greedy(16));
    /// while let Some(piece) = std::future::poll_fn(|cx| pin!(&mut pieces).poll_next(cx)).await {
    ///     print!("{}", piece?);
    /// }
    /// let (session, generation) = pieces.into_session().await?;
    /// # Ok(()) }
    /// ```
    pub fn into_async_stream(
        self,
        prompt: impl Into<String>,
        options: GenerateOptions,
    ) -> AsyncPieces {
        let prompt = prompt.into();
        let (tx, rx) = mpsc::channel(16);
        let cancel = self.cancel_handle();
        let task = tokio::task::spawn_blocking(move || {
            let mut session = self;
            let result = drive(&mut session, &prompt, &options, &tx);
            (session, result)
        });
        AsyncPieces {
            rx,
            cancel,
            task: Some(task),
        }
    }
}

fn drive(
    session: &mut Session<'static>,
    prompt: &str,
    options: &GenerateOptions,
    tx: &mpsc::Sender<Result<String>>,
) -> Result<Generation> {
    let mut pieces = match session.stream(prompt, options) {
        Ok(p) => p,
        Err(e) => {
            let _ = tx.blocking_send(Err(e.clone()));
            return Err(e);
        }
    };
    for item in pieces.by_ref() {
        let failed = item.as_ref().err().cloned();
        if tx.blocking_send(item).is_err() {
            break; // the consumer is gone: dropping `pieces` stops the generation
        }
        if let Some(e) = failed {
            return Err(e);
        }
    }
    Ok(pieces.generation())
}

impl AsyncPieces {
    /// Stops the generation if it is still running (pieces not yet received are dropped),
    /// waits for the blocking thread and returns the session with the generation's outcome.
    pub async fn into_session(mut self) -> Result<(Session<'static>, Generation)> {
        self.rx.close();
        let task = self.task.take().expect("task present until into_session");
        match task.await {
            Ok((session, result)) => result.map(|g| (session, g)),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(Error::new(
                ErrorCode::Internal,
                format!("generation task failed: {e}"),
            )),
        }
    }
}

impl Stream for AsyncPieces {
    type Item = Result<String>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for AsyncPieces {
    fn drop(&mut self) {
        if self.task.is_some() {
            self.cancel.cancel(); // the blocking thread stops at the next token
        }
    }
}
