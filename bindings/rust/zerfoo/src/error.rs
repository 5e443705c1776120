//! Errors: the library's status code and its message from `zf_last_error()`.
use std::ffi::CStr;
use std::fmt;

use zerfoo_sys as sys;

/// A zerfoo status code, as returned by every fallible C function.
///
/// The C side may add codes in later versions: unknown values arrive as [`ErrorCode::Other`].
///
/// ```
/// use zerfoo::ErrorCode;
/// assert_eq!(ErrorCode::from_status(3), ErrorCode::Format);
/// assert_eq!(ErrorCode::from_status(999), ErrorCode::Other(999));
/// assert_eq!(ErrorCode::Format.status(), 3);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// A NULL handle or pointer, an out-of-range value, or a call the object's state forbids.
    InvalidArgument,
    /// The file could not be opened, read or mapped.
    Io,
    /// The file is not a valid GGUF file.
    Format,
    /// Valid input the library does not support (architecture, tensor type, chat template).
    Unsupported,
    /// An allocation failed.
    OutOfMemory,
    /// An output buffer was too small (the safe API retries; not normally seen).
    BufferTooSmall,
    /// A metadata key or token does not exist.
    NotFound,
    /// Input text is not valid UTF-8.
    InvalidUtf8,
    /// The tokens do not fit in the session's context.
    ContextFull,
    /// An operation was cancelled.
    Cancelled,
    /// The requested compute backend is unavailable or failed.
    Backend,
    /// A bug in zerfoo; the message has details.
    Internal,
    /// A chat template failed to render (the message says where).
    Template,
    /// The library could not be loaded or its version does not match these bindings
    /// (not a C status code; [`ErrorCode::status`] gives -1).
    Library,
    /// A status code these bindings do not know.
    Other(i32),
}

impl ErrorCode {
    /// Maps a nonzero C status to a code (`ZF_OK` maps to `Other(0)`).
    pub fn from_status(status: i32) -> ErrorCode {
        match status {
            sys::ZF_ERR_INVALID_ARGUMENT => ErrorCode::InvalidArgument,
            sys::ZF_ERR_IO => ErrorCode::Io,
            sys::ZF_ERR_FORMAT => ErrorCode::Format,
            sys::ZF_ERR_UNSUPPORTED => ErrorCode::Unsupported,
            sys::ZF_ERR_OUT_OF_MEMORY => ErrorCode::OutOfMemory,
            sys::ZF_ERR_BUFFER_TOO_SMALL => ErrorCode::BufferTooSmall,
            sys::ZF_ERR_NOT_FOUND => ErrorCode::NotFound,
            sys::ZF_ERR_INVALID_UTF8 => ErrorCode::InvalidUtf8,
            sys::ZF_ERR_CONTEXT_FULL => ErrorCode::ContextFull,
            sys::ZF_ERR_CANCELLED => ErrorCode::Cancelled,
            sys::ZF_ERR_BACKEND => ErrorCode::Backend,
            sys::ZF_ERR_INTERNAL => ErrorCode::Internal,
            sys::ZF_ERR_TEMPLATE => ErrorCode::Template,
            other => ErrorCode::Other(other),
        }
    }

    /// The C status value (`ZF_ERR_*`); -1 for [`ErrorCode::Library`].
    pub fn status(self) -> i32 {
        match self {
            ErrorCode::InvalidArgument => sys::ZF_ERR_INVALID_ARGUMENT,
            ErrorCode::Io => sys::ZF_ERR_IO,
            ErrorCode::Format => sys::ZF_ERR_FORMAT,
            ErrorCode::Unsupported => sys::ZF_ERR_UNSUPPORTED,
            ErrorCode::OutOfMemory => sys::ZF_ERR_OUT_OF_MEMORY,
            ErrorCode::BufferTooSmall => sys::ZF_ERR_BUFFER_TOO_SMALL,
            ErrorCode::NotFound => sys::ZF_ERR_NOT_FOUND,
            ErrorCode::InvalidUtf8 => sys::ZF_ERR_INVALID_UTF8,
            ErrorCode::ContextFull => sys::ZF_ERR_CONTEXT_FULL,
            ErrorCode::Cancelled => sys::ZF_ERR_CANCELLED,
            ErrorCode::Backend => sys::ZF_ERR_BACKEND,
            ErrorCode::Internal => sys::ZF_ERR_INTERNAL,
            ErrorCode::Template => sys::ZF_ERR_TEMPLATE,
            ErrorCode::Library => -1,
            ErrorCode::Other(s) => s,
        }
    }
}

/// An error from zerfoo: a [`code`](Error::code) and the library's message.
///
/// ```
/// # use zerfoo::{ErrorCode, Model, ModelOptions};
/// match Model::load("missing.gguf", &ModelOptions::default()) {
///     Err(e) if e.code() == ErrorCode::Io => eprintln!("no such model: {e}"),
///     Err(e) => eprintln!("load failed: {e}"),
///     Ok(_) => {}
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    code: ErrorCode,
    message: String,
}

impl Error {
    /// Builds an error with a code and message (for example in tests or wrappers).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
        }
    }

    /// The status code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message, from `zf_last_error()` for library failures (it names the problem
    /// precisely, e.g. the file and offset of a malformed GGUF).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The error of a failed C call: must run on the failing call's thread, before any other
    /// zerfoo call there.
    pub(crate) fn last(status: i32) -> Error {
        // SAFETY: zf_last_error never returns NULL; the string lives until the next call.
        let message = unsafe { CStr::from_ptr(sys::zf!(zf_last_error())) }
            .to_string_lossy()
            .into_owned();
        Error {
            code: ErrorCode::from_status(status),
            message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.code {
            ErrorCode::Library => "library".to_string(),
            ErrorCode::Other(s) => format!("status {s}"),
            c => format!("{c:?}"),
        };
        if self.message.is_empty() {
            write!(f, "zerfoo: {name}")
        } else {
            write!(f, "zerfoo: {} ({name})", self.message)
        }
    }
}

impl std::error::Error for Error {}

impl From<sys::LoadError> for Error {
    fn from(e: sys::LoadError) -> Error {
        Error::new(ErrorCode::Library, e.0)
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Turns a C status into a Result, reading the message on failure.
pub(crate) fn check(status: i32) -> Result<()> {
    if status == sys::ZF_OK {
        Ok(())
    } else {
        Err(Error::last(status))
    }
}
