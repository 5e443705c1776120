//! The `tokio` feature: the async Stream gives the iterator's pieces and cancels on drop.
#![cfg(feature = "tokio")]
mod common;

use std::future::poll_fn;
use std::pin::Pin;

use common::{model, PROMPT};
use futures_core::Stream;
use zerfoo::{AsyncPieces, GenerateOptions, SessionOptions, StopReason};

async fn next(s: &mut AsyncPieces) -> Option<zerfoo::Result<String>> {
    poll_fn(|cx| Pin::new(&mut *s).poll_next(cx)).await
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

#[test]
fn async_stream_matches_the_iterator() {
    let Some(model) = model() else { return };
    let so = SessionOptions {
        n_ctx: 512,
        n_threads: 1,
        ..Default::default()
    };
    let options = GenerateOptions::greedy(24);
    let expected: Vec<String> = model
        .session(&so)
        .unwrap()
        .stream(PROMPT, &options)
        .unwrap()
        .map(|p| p.unwrap())
        .collect();
    runtime().block_on(async {
        let mut s = model
            .session_owned(&so)
            .unwrap()
            .into_async_stream(PROMPT, options.clone());
        let mut got = Vec::new();
        while let Some(p) = next(&mut s).await {
            got.push(p.unwrap());
        }
        assert_eq!(got, expected);
        let (mut session, g) = s.into_session().await.unwrap();
        assert_eq!(g.text, expected.concat());
        assert_eq!(g.stop_reason, StopReason::MaxTokens);
        // The session comes back and continues.
        assert_eq!(
            session
                .generate(" Yes", &GenerateOptions::greedy(2))
                .unwrap()
                .generated_tokens,
            2
        );
    });
}

#[test]
fn dropping_the_async_stream_stops_generation() {
    let Some(model) = model() else { return };
    let so = SessionOptions {
        n_ctx: 4096,
        n_threads: 1,
        ..Default::default()
    };
    let options = GenerateOptions {
        max_tokens: None,
        ignore_eos: true,
        ..GenerateOptions::greedy(0)
    };
    let rt = runtime();
    let dropped_at = rt.block_on(async {
        let mut s = model
            .session_owned(&so)
            .unwrap()
            .into_async_stream(PROMPT, options.clone());
        next(&mut s).await.unwrap().unwrap();
        let at = std::time::Instant::now();
        drop(s);
        // A prompt error is the stream's only item.
        let mut bad = model
            .session_owned(&so)
            .unwrap()
            .into_async_stream("", GenerateOptions::greedy(2));
        let e = next(&mut bad).await.unwrap().unwrap_err();
        assert_eq!(e.code(), zerfoo::ErrorCode::InvalidArgument);
        assert!(next(&mut bad).await.is_none());
        assert!(bad.into_session().await.is_err());
        at
    });
    // Dropping the runtime waits for its blocking threads: the unbounded generation (4096
    // tokens of context) must have stopped at the next token, not run on.
    drop(rt);
    assert!(
        dropped_at.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        dropped_at.elapsed()
    );
}
