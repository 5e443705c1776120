//! Chat turns (`zf_chat_turn_*`): a whole assistant turn from an OpenAI-style request, as typed
//! events through an iterator or a callback, or as the final assistant message.
use std::any::Any;
use std::ffi::{c_void, CStr, CString};
use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::time::Duration;

use zerfoo_sys as sys;

use crate::chat::AssistantMessage;
use crate::chat_request::ChatRequest;
use crate::error::{check, Error, ErrorCode, Result};
use crate::model::{c_string, read_buffer, Model};
use crate::session::{
    GenerateOptions, RawParams, Session, StopReason, TokenLogprob, TokenLogprobs,
};

/// Options of a chat turn besides its request: the template and the generation options.
///
/// ```
/// let opts = zerfoo::TurnOptions {
///     generate: zerfoo::GenerateOptions::greedy(128),
///     ..Default::default()
/// };
/// assert!(opts.template.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnOptions {
    /// Sampling, `max_tokens`, stop strings, seed, logprobs, drafting, and an output
    /// constraint of any kind (instead of the request's `response_format`), as for
    /// [`Session::generate`]. `constraint_trigger`, `add_special: false` and
    /// `parse_special: false` are [`ErrorCode::InvalidArgument`]: the turn decides them.
    pub generate: GenerateOptions,
    /// Use the file's `tokenizer.chat_template.NAME` (an unknown name is
    /// [`ErrorCode::NotFound`]).
    pub template_name: Option<String>,
    /// The caller's own Jinja template (overrides the file's and `template_name`).
    pub template: Option<String>,
    /// The clock the template's `strftime_now` reads (Unix seconds; `None`: now).
    pub time_unix: Option<i64>,
    /// The model's projector (`zf_turn_params.mmproj`): with a vision projector the request's
    /// messages may hold images ([`Message::user_with_images`](crate::Message::user_with_images), or `image_url` parts with data: URLs),
    /// with an audio projector audio clips ([`Message::user_with_audio`](crate::Message::user_with_audio), or `input_audio`
    /// parts with WAV data), placed where the template puts their message's text. Without it (or
    /// with the other kind) such a part is [`ErrorCode::InvalidArgument`] naming it.
    pub mmproj: Option<std::sync::Arc<crate::Mmproj>>,
}

/// Why a turn ended, in OpenAI's terms (`finish_reason`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinishReason {
    /// The model ended the turn, or a stop string, a callback or a cancel did (`"stop"`).
    Stop,
    /// `max_tokens` or the context ended it (`"length"`).
    Length,
    /// The turn ended with tool calls to run (`"tool_calls"`).
    ToolCalls,
    /// A reason these bindings do not know.
    Other(i32),
}

impl FinishReason {
    fn from_raw(v: i32) -> FinishReason {
        match v {
            sys::ZF_FINISH_STOP => FinishReason::Stop,
            sys::ZF_FINISH_LENGTH => FinishReason::Length,
            sys::ZF_FINISH_TOOL_CALLS => FinishReason::ToolCalls,
            other => FinishReason::Other(other),
        }
    }
}

/// A turn's token counts (OpenAI's `usage`, with speculative decoding's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Usage {
    /// The rendered prompt's tokens.
    pub prompt_tokens: usize,
    /// Of those, not evaluated again: kept in the session from an earlier turn, or copied
    /// from the model's prefix cache (`prompt_tokens_details.cached_tokens`).
    pub cached_tokens: usize,
    /// Tokens generated.
    pub completion_tokens: usize,
    /// Tokens drafted by speculative decoding.
    pub drafted_tokens: usize,
    /// Of those, kept.
    pub accepted_tokens: usize,
}

/// How a turn ended: the last event ([`TurnEvent::Done`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnDone {
    /// Why, in OpenAI's terms.
    pub finish_reason: FinishReason,
    /// Why generation stopped ([`StopReason::Callback`] for a callback's `Break` or a dropped
    /// iterator, [`StopReason::Cancelled`] for a [`CancelHandle`](crate::CancelHandle)).
    pub stop_reason: StopReason,
    /// Token counts.
    pub usage: Usage,
    /// Rendering, tokenizing and evaluating the prompt.
    pub prompt_time: Duration,
    /// Generating.
    pub decode_time: Duration,
}

/// One event of a chat turn. A turn's events, concatenated per kind, are its final
/// [`AssistantMessage`]: the `Content` texts its content, the `Reasoning` texts its reasoning;
/// each `ToolCall` starts call `index` and that call's `ToolArguments` texts are its arguments.
/// Calls come in index order; a call's arguments come after its `ToolCall`.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// More of the answer's text.
    Content(String),
    /// More of the reasoning (thinking) text.
    Reasoning(String),
    /// A tool call begins.
    ToolCall {
        /// The call's index (0, 1, ...).
        index: usize,
        /// The call's id.
        id: String,
        /// The function's name.
        name: String,
    },
    /// More of call `index`'s arguments (JSON text).
    ToolArguments {
        /// The call's index.
        index: usize,
        /// The fragment.
        text: String,
    },
    /// The log-probabilities of tokens whose text is held back (a marker, or a call still
    /// arriving); only with [`GenerateOptions::logprobs`]. Logprobs that come with other
    /// events are in [`Turn::event_logprobs`] and [`TurnOutcome::logprobs`].
    Logprobs(Vec<TokenLogprobs>),
    /// The last event: how the turn ended.
    Done(TurnDone),
}

/// A finished turn: the assistant message, how it ended, and the logprobs (with
/// [`GenerateOptions::logprobs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    /// The assistant message (`zf_chat_turn_message`): content, reasoning, tool calls.
    pub message: AssistantMessage,
    /// How the turn ended and its usage.
    pub done: TurnDone,
    /// Every generated token's logprobs, in order (empty unless asked for).
    pub logprobs: Vec<TokenLogprobs>,
}

/// Copies an event out of the library's borrowed memory: the event (`None` for a kind a newer
/// library added, which is skipped) and the logprobs it carries.
///
/// # Safety
/// The event's pointers are valid (during the callback, or until the next call on the turn).
unsafe fn event_from_raw(e: &sys::zf_turn_event) -> (Option<TurnEvent>, Vec<TokenLogprobs>) {
    let text = || {
        if e.text.is_null() || e.text_len == 0 {
            String::new()
        } else {
            // SAFETY: text holds text_len bytes (whole UTF-8 characters).
            let b = unsafe { std::slice::from_raw_parts(e.text.cast::<u8>(), e.text_len) };
            String::from_utf8_lossy(b).into_owned()
        }
    };
    let c_text = |p: *const std::ffi::c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: tool_id and tool_name are NUL-terminated.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    let index = e.tool_index.max(0) as usize;
    let mut logprobs = Vec::new();
    if !e.logprobs.is_null() && e.n_logprobs > 0 && e.logprob_stride > 0 {
        // SAFETY: n_logprobs entries, logprob_stride per token.
        let flat = unsafe { std::slice::from_raw_parts(e.logprobs, e.n_logprobs) };
        let conv = |t: &sys::zf_token_logprob| TokenLogprob {
            token: t.token,
            logprob: t.logprob,
        };
        logprobs = flat
            .chunks_exact(e.logprob_stride)
            .map(|c| TokenLogprobs {
                chosen: conv(&c[0]),
                top: c[1..].iter().map(conv).collect(),
            })
            .collect();
    }
    let event = match e.kind {
        sys::ZF_TURN_CONTENT => TurnEvent::Content(text()),
        sys::ZF_TURN_REASONING => TurnEvent::Reasoning(text()),
        sys::ZF_TURN_TOOL_CALL => TurnEvent::ToolCall {
            index,
            id: c_text(e.tool_id),
            name: c_text(e.tool_name),
        },
        sys::ZF_TURN_TOOL_ARGS => TurnEvent::ToolArguments {
            index,
            text: text(),
        },
        sys::ZF_TURN_LOGPROBS => TurnEvent::Logprobs(std::mem::take(&mut logprobs)),
        sys::ZF_TURN_DONE => TurnEvent::Done(TurnDone {
            finish_reason: FinishReason::from_raw(e.finish_reason),
            stop_reason: StopReason::from_raw(e.stop_reason),
            usage: Usage {
                prompt_tokens: e.n_prompt.max(0) as usize,
                cached_tokens: e.n_cached.max(0) as usize,
                completion_tokens: e.n_generated.max(0) as usize,
                drafted_tokens: e.n_drafted.max(0) as usize,
                accepted_tokens: e.n_accepted.max(0) as usize,
            },
            prompt_time: Duration::from_secs_f64(e.prompt_ms.max(0.0) / 1000.0),
            decode_time: Duration::from_secs_f64(e.decode_ms.max(0.0) / 1000.0),
        }),
        _ => return (None, logprobs),
    };
    (Some(event), logprobs)
}

fn empty_event() -> sys::zf_turn_event {
    // SAFETY: an all-zero zf_turn_event is a valid value (NULL pointers, zero counts).
    let mut e: sys::zf_turn_event = unsafe { std::mem::zeroed() };
    e.struct_size = std::mem::size_of::<sys::zf_turn_event>() as u32;
    e
}

/// `zf_turn_params` plus everything it points to, alive as long as it.
struct RawTurnParams {
    p: sys::zf_turn_params,
    _request: CString,
    _template_name: Option<CString>,
    _template: Option<CString>,
    _generate: Box<RawParams>,
    _mmproj: Option<std::sync::Arc<crate::Mmproj>>,
}

impl RawTurnParams {
    fn new(request_json: &str, o: &TurnOptions) -> Result<RawTurnParams> {
        let generate = Box::new(RawParams::new(&o.generate)?);
        let request = c_string("request_json", request_json)?;
        let name = o
            .template_name
            .as_deref()
            .map(|s| c_string("template_name", s))
            .transpose()?;
        let template = o
            .template
            .as_deref()
            .map(|s| c_string("template", s))
            .transpose()?;
        // SAFETY: zf_turn_params_init fills the struct it is given.
        let mut p: sys::zf_turn_params = unsafe { std::mem::zeroed() };
        check(unsafe {
            sys::zf!(zf_turn_params_init(
                &mut p,
                std::mem::size_of::<sys::zf_turn_params>()
            ))
        })?;
        p.request_json = request.as_ptr();
        p.template_name = name.as_ref().map_or(ptr::null(), |c| c.as_ptr());
        p.template_text = template.as_ref().map_or(ptr::null(), |c| c.as_ptr());
        p.generate = &generate.p;
        if let Some(t) = o.time_unix {
            p.flags |= sys::ZF_CHAT_FIXED_TIME as u32;
            p.time_unix = t;
        }
        if let Some(m) = &o.mmproj {
            p.mmproj = m.raw();
        }
        Ok(RawTurnParams {
            p,
            _request: request,
            _template_name: name,
            _template: template,
            _generate: generate,
            _mmproj: o.mmproj.clone(),
        })
    }
}

/// A running chat turn ([`Session::chat_turn`]): an iterator of [`TurnEvent`]s pulled one at a
/// time from the library (`zf_chat_turn_next`), ending with [`TurnEvent::Done`].
///
/// An error ends the iteration. Dropping the turn early stops it (as a callback's `Break`
/// would) and frees it; the session keeps what was generated, so the next turn reuses it.
/// A [`CancelHandle`](crate::CancelHandle) stops it from another thread
/// ([`StopReason::Cancelled`]).
pub struct Turn<'s> {
    turn: NonNull<sys::zf_turn>,
    event_logprobs: Vec<TokenLogprobs>,
    logprobs: Vec<TokenLogprobs>,
    done: Option<TurnDone>,
    ended: bool,
    _session: PhantomData<&'s mut ()>,
}

// SAFETY: a turn, like its session, may move between threads (one at a time).
unsafe impl Send for Turn<'_> {}

impl std::fmt::Debug for Turn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn").field("done", &self.done).finish()
    }
}

impl Turn<'_> {
    fn from_raw(out: *mut sys::zf_turn, what: &str) -> Result<Self> {
        let turn = NonNull::new(out)
            .ok_or_else(|| Error::new(ErrorCode::Internal, format!("{what} returned no turn")))?;
        Ok(Turn {
            turn,
            event_logprobs: Vec::new(),
            logprobs: Vec::new(),
            done: None,
            ended: false,
            _session: PhantomData,
        })
    }

    /// How the turn ended, once [`TurnEvent::Done`] has been returned.
    pub fn done(&self) -> Option<&TurnDone> {
        self.done.as_ref()
    }

    /// With [`GenerateOptions::logprobs`]: the logprobs carried by the event returned last
    /// (the tokens generated since the previous event that carried any). Empty otherwise.
    pub fn event_logprobs(&self) -> &[TokenLogprobs] {
        &self.event_logprobs
    }

    /// The assistant message so far (`zf_chat_turn_message`): after the turn, its final
    /// message; before, what the events have said.
    pub fn message(&self) -> Result<AssistantMessage> {
        let b = read_buffer(true, |buf, cap, needed| unsafe {
            sys::zf!(zf_chat_turn_message(self.turn.as_ptr(), buf, cap, needed))
        })?;
        let json = String::from_utf8(b).map_err(|_| {
            Error::new(
                ErrorCode::Internal,
                "zf_chat_turn_message returned text that is not UTF-8",
            )
        })?;
        AssistantMessage::from_json(json)
    }

    /// Runs the rest of the turn and returns its message, end and logprobs.
    pub fn finish(mut self) -> Result<TurnOutcome> {
        for event in self.by_ref() {
            event?;
        }
        let done = self.done.ok_or_else(|| {
            Error::new(ErrorCode::Internal, "the turn ended without a DONE event")
        })?;
        Ok(TurnOutcome {
            message: self.message()?,
            done,
            logprobs: std::mem::take(&mut self.logprobs),
        })
    }
}

impl Iterator for Turn<'_> {
    type Item = Result<TurnEvent>;

    fn next(&mut self) -> Option<Result<TurnEvent>> {
        while !self.ended {
            let mut e = empty_event();
            // SAFETY: the turn is alive; e has struct_size set.
            let st = unsafe { sys::zf!(zf_chat_turn_next(self.turn.as_ptr(), &mut e)) };
            if let Err(err) = check(st) {
                self.ended = true;
                return Some(Err(err));
            }
            // SAFETY: e's pointers are valid until the next call on the turn: copied out here.
            let (event, lp) = unsafe { event_from_raw(&e) };
            self.logprobs.extend_from_slice(&lp);
            self.event_logprobs = lp;
            match &event {
                Some(TurnEvent::Done(d)) => {
                    self.done = Some(*d);
                    self.ended = true;
                }
                Some(TurnEvent::Logprobs(held)) => self.logprobs.extend_from_slice(held),
                _ => {}
            }
            if event.is_some() {
                return event.map(Ok);
            }
        }
        None
    }
}

impl std::iter::FusedIterator for Turn<'_> {}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        // SAFETY: we own the turn; it stops it if still running.
        unsafe { sys::zf!(zf_chat_turn_free(self.turn.as_ptr())) }
    }
}

/// A turn's event callback, as the trampoline calls it.
type OnEvent<'f> = &'f mut dyn FnMut(&TurnEvent) -> ControlFlow<()>;

struct TurnCallbackState<'f> {
    f: OnEvent<'f>,
    panic: Option<Box<dyn Any + Send + 'static>>,
    logprobs: Vec<TokenLogprobs>,
}

/// The zf_turn_cb: copies the event out and passes it to the closure; a panic stops the turn
/// and is kept for the caller (it never unwinds into C).
unsafe extern "C" fn turn_trampoline(
    user_data: *mut c_void,
    event: *const sys::zf_turn_event,
) -> i32 {
    // SAFETY: user_data is the &mut TurnCallbackState passed to zf_chat_turn, alive for the
    // call; event is valid during this callback.
    let state = unsafe { &mut *user_data.cast::<TurnCallbackState<'_>>() };
    if state.panic.is_some() || event.is_null() {
        return 1;
    }
    let (event, lp) = unsafe { event_from_raw(&*event) };
    state.logprobs.extend(lp);
    let Some(event) = event else {
        return 0;
    };
    if let TurnEvent::Logprobs(held) = &event {
        state.logprobs.extend_from_slice(held);
    }
    let f = &mut state.f;
    match panic::catch_unwind(AssertUnwindSafe(|| f(&event))) {
        Ok(ControlFlow::Continue(())) => 0,
        Ok(ControlFlow::Break(())) => 1,
        Err(payload) => {
            state.panic = Some(payload);
            1
        }
    }
}

impl<'m> Session<'m> {
    /// Starts an assistant turn (`zf_chat_turn_begin`): renders the request's conversation
    /// with the chat template (tools, documents, template variables), keeps what the session
    /// already holds of that prompt, evaluates the rest and prepares the output constraint
    /// (`response_format`, the tool-call grammar for `tool_choice`, or
    /// [`GenerateOptions::constraint`]). The returned [`Turn`] generates as it is iterated.
    ///
    /// Errors (at once, nothing generated): malformed request JSON, a field of the wrong type
    /// or value, a `tool_choice` naming no offered tool, an invalid schema or constraint are
    /// [`ErrorCode::InvalidArgument`] with the library's message naming the field; a failing
    /// template [`ErrorCode::Template`]; a prompt that does not fit [`ErrorCode::ContextFull`].
    ///
    /// ```
    /// # use zerfoo::*;
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let mut session = model.session(&Default::default())?;
    /// let request = ChatRequest::new(vec![Message::user("Say hello.")]);
    /// let opts = TurnOptions { generate: GenerateOptions::greedy(16), ..Default::default() };
    /// let mut turn = session.chat_turn(&request, &opts)?;
    /// for event in turn.by_ref() {
    ///     match event? {
    ///         TurnEvent::Content(text) => print!("{text}"),
    ///         TurnEvent::ToolCall { name, .. } => println!("calls {name}"),
    ///         TurnEvent::Done(done) => println!("\n{:?}", done.finish_reason),
    ///         _ => {}
    ///     }
    /// }
    /// println!("{:?}", turn.message()?.content);
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn chat_turn<'s>(
        &'s mut self,
        request: &ChatRequest,
        options: &TurnOptions,
    ) -> Result<Turn<'s>> {
        self.chat_turn_json(&request.to_json().to_string(), options)
    }

    /// [`chat_turn`](Session::chat_turn) with the request as JSON text, passed as it is.
    pub fn chat_turn_json<'s>(
        &'s mut self,
        request_json: &str,
        options: &TurnOptions,
    ) -> Result<Turn<'s>> {
        let params = RawTurnParams::new(request_json, options)?;
        let mut out = ptr::null_mut();
        // SAFETY: the session is alive and exclusively borrowed for 's; params outlive the call.
        check(unsafe { sys::zf!(zf_chat_turn_begin(self.raw(), &params.p, &mut out)) })?;
        Turn::from_raw(out, "zf_chat_turn_begin")
    }

    /// Runs a whole assistant turn (`zf_chat_turn`) and returns its message: content,
    /// reasoning and tool calls, with how it ended. Errors as [`chat_turn`](Session::chat_turn),
    /// and evaluation errors during the turn. A [`CancelHandle`](crate::CancelHandle) ends it
    /// early ([`StopReason::Cancelled`]; the message is what was generated).
    ///
    /// ```
    /// # use zerfoo::*;
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let mut session = model.session(&Default::default())?;
    /// let mut request = ChatRequest::new(vec![Message::user("Say hello.")]);
    /// let opts = TurnOptions { generate: GenerateOptions::greedy(16), ..Default::default() };
    /// let turn = session.chat(&request, &opts)?;
    /// println!("{:?} ({} cached prompt tokens)", turn.message.content, turn.done.usage.cached_tokens);
    /// request.messages.push(turn.message.into()); // the history of the next turn
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn chat(&mut self, request: &ChatRequest, options: &TurnOptions) -> Result<TurnOutcome> {
        self.run_turn(&request.to_json().to_string(), options, None)
    }

    /// [`chat`](Session::chat) with the request as JSON text, passed as it is.
    pub fn chat_json(&mut self, request_json: &str, options: &TurnOptions) -> Result<TurnOutcome> {
        self.run_turn(request_json, options, None)
    }

    /// Runs a whole turn (`zf_chat_turn`), passing each event to `on_event` on this thread as
    /// it arrives; `ControlFlow::Break(())` stops the turn ([`StopReason::Callback`]; the events
    /// so far are the message). A panic in the closure stops the turn and is resumed here after
    /// the C call returns (it never unwinds through C); the session stays usable.
    pub fn chat_with<F>(
        &mut self,
        request: &ChatRequest,
        options: &TurnOptions,
        mut on_event: F,
    ) -> Result<TurnOutcome>
    where
        F: FnMut(&TurnEvent) -> ControlFlow<()>,
    {
        self.run_turn(&request.to_json().to_string(), options, Some(&mut on_event))
    }

    fn run_turn(
        &mut self,
        request_json: &str,
        options: &TurnOptions,
        on_event: Option<OnEvent<'_>>,
    ) -> Result<TurnOutcome> {
        let params = RawTurnParams::new(request_json, options)?;
        // Logprobs come with the events: read them through a callback when asked for.
        let mut ignore = |_: &TurnEvent| ControlFlow::Continue(());
        let on_event: Option<OnEvent<'_>> = match on_event {
            Some(f) => Some(&mut *f),
            None if options.generate.logprobs > 0 => Some(&mut ignore),
            None => None,
        };
        let mut out = ptr::null_mut();
        let (st, state) = match on_event {
            None => {
                // SAFETY: the session is alive and exclusively borrowed; params outlive the call.
                let st = unsafe {
                    sys::zf!(zf_chat_turn(
                        self.raw(),
                        &params.p,
                        None,
                        ptr::null_mut(),
                        &mut out
                    ))
                };
                (st, None)
            }
            Some(f) => {
                let mut state = TurnCallbackState {
                    f,
                    panic: None,
                    logprobs: Vec::new(),
                };
                // SAFETY: as above; state outlives the call and the callback runs only during it.
                let st = unsafe {
                    sys::zf!(zf_chat_turn(
                        self.raw(),
                        &params.p,
                        Some(turn_trampoline),
                        (&mut state as *mut TurnCallbackState<'_>).cast(),
                        &mut out
                    ))
                };
                (st, Some((state.panic, state.logprobs)))
            }
        };
        // Read the error first (zf_last_error), and own the turn so that it is freed.
        let error = check(st).err();
        let turn = NonNull::new(out).map(|_| Turn::from_raw(out, "zf_chat_turn"));
        let logprobs = match state {
            Some((Some(payload), _)) => {
                drop(turn);
                panic::resume_unwind(payload);
            }
            Some((None, logprobs)) => Some(logprobs),
            None => None,
        };
        if let Some(e) = error {
            return Err(e);
        }
        // The finished turn repeats its DONE event: finish() reads it and the message.
        let turn =
            turn.ok_or_else(|| Error::new(ErrorCode::Internal, "zf_chat_turn returned no turn"))??;
        let mut outcome = turn.finish()?;
        if let Some(lp) = logprobs {
            outcome.logprobs = lp;
        }
        Ok(outcome)
    }
}

impl Model {
    /// The prompt a [`Session::chat_turn`] with this request and options would evaluate
    /// (`zf_chat_turn_prompt`): the request's messages, tools and documents rendered with the
    /// template exactly as the turn renders them, the generation prompt added (a named
    /// `tool_choice` shows only that tool). Nothing is evaluated; `options.template`,
    /// `template_name` and `time_unix` apply, `options.generate` is only checked. For counting a
    /// request's tokens: [`Model::tokenize`] with both flags `true`. Errors as
    /// [`chat_turn`](Session::chat_turn)'s request and template errors. Thread-safe.
    ///
    /// ```
    /// # use zerfoo::*;
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let request = ChatRequest::new(vec![Message::user("Say hello.")]);
    /// let prompt = model.chat_turn_prompt(&request, &TurnOptions::default())?;
    /// assert!(prompt.contains("Say hello."));
    /// assert!(model.tokenize(&prompt, true, true)?.len() > 3); // what the turn would evaluate
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn chat_turn_prompt(&self, request: &ChatRequest, options: &TurnOptions) -> Result<String> {
        self.chat_turn_prompt_json(&request.to_json().to_string(), options)
    }

    /// [`chat_turn_prompt`](Model::chat_turn_prompt) with the request as JSON text, passed as it is.
    pub fn chat_turn_prompt_json(
        &self,
        request_json: &str,
        options: &TurnOptions,
    ) -> Result<String> {
        let params = RawTurnParams::new(request_json, options)?;
        // SAFETY: the model is alive; params outlive the call.
        let b = read_buffer(true, |buf, cap, needed| unsafe {
            sys::zf!(zf_chat_turn_prompt(self.raw(), &params.p, buf, cap, needed))
        })?;
        String::from_utf8(b).map_err(|_| {
            Error::new(
                ErrorCode::Internal,
                "zf_chat_turn_prompt returned text that is not UTF-8",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_copied_out_of_the_library_struct() {
        let text = "héllo";
        let mut e = empty_event();
        e.kind = sys::ZF_TURN_CONTENT;
        e.text = text.as_ptr().cast();
        e.text_len = text.len();
        e.tool_index = -1;
        let lp = [
            sys::zf_token_logprob {
                token: 7,
                logprob: -0.5,
            },
            sys::zf_token_logprob {
                token: 7,
                logprob: -0.5,
            },
            sys::zf_token_logprob {
                token: 9,
                logprob: -1.0,
            },
            sys::zf_token_logprob {
                token: 3,
                logprob: -2.0,
            },
        ];
        e.logprobs = lp.as_ptr();
        e.n_logprobs = 4;
        e.logprob_stride = 2;
        let (ev, got) = unsafe { event_from_raw(&e) };
        assert_eq!(ev, Some(TurnEvent::Content(text.into())));
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].chosen.token, 9);
        assert_eq!(got[1].top[0].token, 3);

        // Held-back tokens' logprobs are the event itself.
        e.kind = sys::ZF_TURN_LOGPROBS;
        e.text = ptr::null();
        e.text_len = 0;
        let (ev, got) = unsafe { event_from_raw(&e) };
        assert!(matches!(ev, Some(TurnEvent::Logprobs(ref v)) if v.len() == 2));
        assert!(got.is_empty());

        let mut e = empty_event();
        e.kind = sys::ZF_TURN_TOOL_CALL;
        e.tool_index = 1;
        e.tool_id = c"call_1".as_ptr();
        e.tool_name = c"f".as_ptr();
        let (ev, _) = unsafe { event_from_raw(&e) };
        assert_eq!(
            ev,
            Some(TurnEvent::ToolCall {
                index: 1,
                id: "call_1".into(),
                name: "f".into()
            })
        );
        e.kind = 99; // a kind a newer library added: skipped
        assert_eq!(unsafe { event_from_raw(&e) }.0, None);

        let mut e = empty_event();
        e.kind = sys::ZF_TURN_DONE;
        e.finish_reason = sys::ZF_FINISH_TOOL_CALLS;
        e.stop_reason = sys::ZF_STOP_EOS;
        e.n_prompt = 30;
        e.n_cached = 20;
        e.n_generated = 5;
        e.prompt_ms = 1500.0;
        let (ev, _) = unsafe { event_from_raw(&e) };
        let Some(TurnEvent::Done(d)) = ev else {
            panic!("{ev:?}")
        };
        assert_eq!(d.finish_reason, FinishReason::ToolCalls);
        assert_eq!(d.stop_reason, StopReason::Eos);
        assert_eq!(
            d.usage,
            Usage {
                prompt_tokens: 30,
                cached_tokens: 20,
                completion_tokens: 5,
                ..Default::default()
            }
        );
        assert_eq!(d.prompt_time, Duration::from_millis(1500));
    }
}
