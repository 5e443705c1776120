// Audio bytes to 16 kHz mono PCM: the container named from its first bytes, WAV decoded by the
// library, MP3/FLAC/Ogg Vorbis by miniaudio into a float WAV that the library then resamples.
#include "audio_decode.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(ZF_HAVE_MINIAUDIO)
#include <miniaudio.h>
#endif

namespace cli::audio {

namespace {

bool StartsWith(std::string_view b, const char* magic, size_t at = 0) {
  const size_t n = std::strlen(magic);
  return b.size() >= at + n && b.compare(at, n, magic) == 0;
}

uint8_t Byte(std::string_view b, size_t i) { return static_cast<uint8_t>(b[i]); }

}  // namespace

std::string Container(std::string_view b) {
  if (StartsWith(b, "RIFF") && StartsWith(b, "WAVE", 8)) return "WAV";
  if (StartsWith(b, "ID3")) return "MP3";
  if (b.size() >= 2 && Byte(b, 0) == 0xFF && (Byte(b, 1) & 0xE0) == 0xE0) {
    // A frame sync: MPEG audio, unless the layer bits are 00 (AAC's ADTS header).
    return (Byte(b, 1) & 0x06) == 0 ? "AAC" : "MP3";
  }
  if (StartsWith(b, "fLaC")) return "FLAC";
  if (StartsWith(b, "OggS")) {
    // The first page's packet names the codec (28 bytes in: after the 27-byte page header and
    // its one-byte segment table).
    if (b.find("\x01vorbis", 27) == 28) return "Ogg Vorbis";
    if (StartsWith(b, "OpusHead", 28)) return "Ogg Opus";
    return "Ogg";
  }
  if (StartsWith(b, "ftyp", 4)) return "MP4/M4A";
  if (StartsWith(b, "\x1A\x45\xDF\xA3")) return "WebM/Matroska";
  return "";
}

bool HaveCodecs() {
#if defined(ZF_HAVE_MINIAUDIO)
  return true;
#else
  return false;
#endif
}

namespace {

zf_status DecodeWav(std::string_view bytes, std::vector<float>* pcm, std::string* error) {
  size_t n = 0;
  zf_status st = zf_wav_decode(bytes.data(), bytes.size(), nullptr, 0, &n);
  if (st == ZF_ERR_BUFFER_TOO_SMALL) {
    pcm->assign(n, 0.0f);
    st = zf_wav_decode(bytes.data(), bytes.size(), pcm->data(), pcm->size(), &n);
  }
  if (st != ZF_OK) {
    *error = zf_last_error();
    return st;
  }
  pcm->resize(n);
  return ZF_OK;
}

#if defined(ZF_HAVE_MINIAUDIO)

void Put32(std::string* s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*s)[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

// A 44-byte header of a mono IEEE-float WAV at `rate`, its sizes filled by FinishWav.
std::string WavHeader(uint32_t rate) {
  std::string h = std::string("RIFF") + std::string(4, '\0') + "WAVEfmt " + std::string(20, '\0') + "data" + std::string(4, '\0');
  Put32(&h, 16, 16);                           // fmt chunk size
  h[20] = 3;                                   // WAVE_FORMAT_IEEE_FLOAT
  h[22] = 1;                                   // channels
  Put32(&h, 24, rate);                         // sample rate
  Put32(&h, 28, rate * 4);                     // byte rate
  h[32] = 4;                                   // block align
  h[34] = 32;                                  // bits per sample
  return h;
}

void FinishWav(std::string* wav) {
  const uint32_t data = static_cast<uint32_t>(wav->size() - 44);
  Put32(wav, 4, data + 36);
  Put32(wav, 40, data);
}

// miniaudio's decoder over the bytes, mono float at the file's own rate, into a float WAV.
zf_status DecodeCompressed(std::string_view bytes, const std::string& name, ma_encoding_format format,
                           double max_seconds, std::string* wav, std::string* error) {
  ma_decoder_config cfg = ma_decoder_config_init(ma_format_f32, 1, 0);  // 0: the file's rate
  cfg.encodingFormat = format;
  ma_decoder dec;
  ma_result r = ma_decoder_init_memory(bytes.data(), bytes.size(), &cfg, &dec);
  if (r != MA_SUCCESS) {
    // MA_NO_BACKEND: the decoder found no stream it can read (miniaudio's words say otherwise).
    *error = "the " + name + " file could not be decoded: " +
             (r == MA_NO_BACKEND ? std::string("no valid " + name + " stream in it (corrupt or truncated)")
                                 : std::string(ma_result_description(r)));
    return ZF_ERR_INVALID_ARGUMENT;
  }
  const uint32_t rate = dec.outputSampleRate;
  if (rate < 1000 || rate > 384000) {
    ma_decoder_uninit(&dec);
    *error = "the " + name + " file's sample rate " + std::to_string(rate) + " Hz is out of range (1000 to 384000)";
    return ZF_ERR_INVALID_ARGUMENT;
  }
  // The length limit, and the WAV's 4 GiB data limit with room to spare (1 GiB of samples).
  const uint64_t max_frames = std::min<uint64_t>(uint64_t(max_seconds * rate), (uint64_t(1) << 30) / 4);
  *wav = WavHeader(rate);
  constexpr ma_uint64 kChunk = 1 << 16;
  zf_status st = ZF_OK;
  for (;;) {
    const size_t at = wav->size();
    wav->resize(at + kChunk * 4);
    ma_uint64 got = 0;
    r = ma_decoder_read_pcm_frames(&dec, &(*wav)[at], kChunk, &got);
    wav->resize(at + got * 4);
    if ((wav->size() - 44) / 4 > max_frames) {
      *error = "the " + name + " audio is longer than the limit of " + std::to_string(int(max_seconds)) +
               " s (or 2^28 samples at its " + std::to_string(rate) + " Hz)";
      st = ZF_ERR_INVALID_ARGUMENT;
      break;
    }
    if (r == MA_AT_END || got == 0) break;
    if (r != MA_SUCCESS) {
      *error = "the " + name + " file could not be decoded (corrupt data: " + ma_result_description(r) + ")";
      st = ZF_ERR_INVALID_ARGUMENT;
      break;
    }
  }
  ma_decoder_uninit(&dec);
  if (st != ZF_OK) return st;
  if (wav->size() == 44) {
    *error = "the " + name + " file holds no audio frames";
    return ZF_ERR_INVALID_ARGUMENT;
  }
  FinishWav(wav);
  return ZF_OK;
}

#endif  // ZF_HAVE_MINIAUDIO

}  // namespace

zf_status Decode(std::string_view bytes, std::vector<float>* pcm, std::string* error, double max_seconds) {
  pcm->clear();
  const std::string name = Container(bytes);
  zf_status st = ZF_OK;
  if (name.empty() || name == "WAV") {
    st = DecodeWav(bytes, pcm, error);  // unrecognized bytes: the WAV decoder names the problem
    if (st != ZF_OK && name.empty()) *error += HaveCodecs() ? "; nor is it MP3, FLAC or Ogg Vorbis" : "";
  } else if (HaveCodecs() && (name == "MP3" || name == "FLAC" || name == "Ogg Vorbis")) {
#if defined(ZF_HAVE_MINIAUDIO)
    const ma_encoding_format f =
        name == "MP3" ? ma_encoding_format_mp3 : name == "FLAC" ? ma_encoding_format_flac : ma_encoding_format_vorbis;
    std::string wav;
    st = DecodeCompressed(bytes, name, f, max_seconds, &wav, error);
    if (st == ZF_OK) {
      st = DecodeWav(wav, pcm, error);
      if (st != ZF_OK) *error = name + " decoded, but: " + *error;
    }
#endif
  } else {
    *error = name + " audio is not supported: " +
             (HaveCodecs() ? std::string("WAV, MP3, FLAC and Ogg Vorbis are") : std::string("only WAV is")) +
             " decoded (convert it, e.g. ffmpeg -i IN -ar 16000 -ac 1 out.wav)";
    return ZF_ERR_UNSUPPORTED;
  }
  if (st == ZF_OK && pcm->empty()) {
    *error = "the " + (name.empty() ? std::string("WAV") : name) + " file holds no samples";
    return ZF_ERR_INVALID_ARGUMENT;
  }
  return st;
}

}  // namespace cli::audio
