//! Audio in the prompt: an audio projector (ultravox, qwen2a, voxtral; [`MmprojInfo::audio`](crate::MmprojInfo::audio))
//! encodes 16 kHz mono PCM ([`Mmproj::embed_audio`], [`Session::eval_audio`](crate::Session::eval_audio));
//! [`decode_wav`](crate::decode_wav) reads WAV files and [`encode_wav`] writes samples as the WAV
//! bytes a chat turn's [`Message::user_with_audio`](crate::Message::user_with_audio) takes.
use zerfoo_sys as sys;

use crate::error::Result;
use crate::vision::{ImageEmbedding, Mmproj};

/// The PCM rate audio projectors take: 16 kHz.
pub const AUDIO_SAMPLE_RATE: u32 = 16000;
/// The shortest clip, in samples: 10 ms (`ZF_AUDIO_MIN_SAMPLES`).
pub const MIN_AUDIO_SAMPLES: usize = sys::ZF_AUDIO_MIN_SAMPLES as usize;
/// The longest clip, in samples: 10 minutes (`ZF_AUDIO_MAX_SAMPLES`).
pub const MAX_AUDIO_SAMPLES: usize = sys::ZF_AUDIO_MAX_SAMPLES as usize;

/// A clip's embeddings: `n_tokens` rows of `n_embd` floats, the same shape as an image's.
pub type AudioEmbedding = ImageEmbedding;

impl Mmproj {
    /// A clip's embeddings as the model takes them in its prompt (`zf_audio_embed`): 16 kHz mono
    /// samples, nominally in [-1, 1], on `n_threads` workers (0: the machine's cores, at most 8).
    /// Ultravox and voxtral give 375 rows per started 30 s, qwen2a 750. An image projector, fewer
    /// than [`MIN_AUDIO_SAMPLES`] or more than [`MAX_AUDIO_SAMPLES`] samples, and a NaN or
    /// infinite sample (its index named) are [`ErrorCode::InvalidArgument`](crate::ErrorCode::InvalidArgument).
    pub fn embed_audio(&self, pcm: &[f32], n_threads: i32) -> Result<AudioEmbedding> {
        // The size first (known from the length alone), then the embeddings.
        ImageEmbedding::encode(|out, cap, needed, n_tokens| {
            // SAFETY: pcm is valid for pcm.len() samples (an empty slice's pointer is non-NULL,
            // so the library names the count); out holds cap floats (NULL with cap 0); needed
            // and n_tokens are valid out-pointers.
            unsafe {
                sys::zf!(zf_audio_embed(
                    self.raw(),
                    pcm.as_ptr(),
                    pcm.len(),
                    n_threads,
                    out,
                    cap,
                    needed,
                    n_tokens
                ))
            }
        })
    }
}

/// 16 kHz mono samples as a WAV file's bytes (32-bit IEEE float: the samples exactly), for a
/// clip decoded from another container (MP3, FLAC, Ogg) or made in memory;
/// [`decode_wav`](crate::decode_wav) reads it back unchanged.
///
/// ```
/// let wav = zerfoo::encode_wav(&[0.0, 0.5]);
/// assert_eq!((&wav[..4], &wav[8..16], wav.len()), (&b"RIFF"[..], &b"WAVEfmt "[..], 44 + 8));
/// ```
pub fn encode_wav(pcm: &[f32]) -> Vec<u8> {
    let data_bytes = (pcm.len() * 4) as u32;
    let mut b = Vec::with_capacity(44 + pcm.len() * 4);
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + data_bytes).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    b.extend_from_slice(&3u16.to_le_bytes()); // WAVE_FORMAT_IEEE_FLOAT
    b.extend_from_slice(&1u16.to_le_bytes()); // mono
    b.extend_from_slice(&AUDIO_SAMPLE_RATE.to_le_bytes());
    b.extend_from_slice(&(AUDIO_SAMPLE_RATE * 4).to_le_bytes()); // byte rate
    b.extend_from_slice(&4u16.to_le_bytes()); // block align
    b.extend_from_slice(&32u16.to_le_bytes()); // bits per sample
    b.extend_from_slice(b"data");
    b.extend_from_slice(&data_bytes.to_le_bytes());
    for v in pcm {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b
}
