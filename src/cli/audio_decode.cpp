// Audio bytes to 16 kHz mono PCM: the container named from its first bytes, WAV decoded by the
// library, MP3/FLAC/Ogg Vorbis by miniaudio into a float WAV that the library then resamples.
#include "audio_decode.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#if defined(ZF_HAVE_MINIAUDIO)
#include <miniaudio.h>
#define STB_VORBIS_HEADER_ONLY
#include <stb_vorbis.c>  // its declarations only: the code is in codecs/miniaudio_impl.c
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

std::string Undecodable(const std::string& name, const std::string& why) {
  return "the " + name + " file could not be decoded: " + why;
}

// Mono float frames at `rate` into a float WAV, under the length limits. read(out, n) writes up
// to n frames and returns how many (0 at the end), or -1 for corrupt data.
template <class Read>
zf_status Collect(const std::string& name, uint32_t rate, double max_seconds, Read read, std::string* wav,
                  std::string* error) {
  if (rate < 1000 || rate > 384000) {
    *error = "the " + name + " file's sample rate " + std::to_string(rate) + " Hz is out of range (1000 to 384000)";
    return ZF_ERR_INVALID_ARGUMENT;
  }
  // The length limit, and the WAV's 4 GiB data limit with room to spare (1 GiB of samples).
  const uint64_t max_frames = std::min<uint64_t>(uint64_t(max_seconds * rate), (uint64_t(1) << 30) / 4);
  *wav = WavHeader(rate);
  constexpr size_t kChunk = 1 << 16;
  for (;;) {
    const size_t at = wav->size();
    wav->resize(at + kChunk * 4);
    const int64_t got = read(reinterpret_cast<float*>(&(*wav)[at]), kChunk);
    wav->resize(at + size_t(std::max<int64_t>(got, 0)) * 4);
    if (got < 0) {
      *error = Undecodable(name, "corrupt data after " + std::to_string((wav->size() - 44) / 4) + " samples");
      return ZF_ERR_INVALID_ARGUMENT;
    }
    if ((wav->size() - 44) / 4 > max_frames) {
      *error = "the " + name + " audio is longer than the limit of " + std::to_string(int(max_seconds)) +
               " s (or 2^28 samples at its " + std::to_string(rate) + " Hz)";
      return ZF_ERR_INVALID_ARGUMENT;
    }
    if (got == 0) break;
  }
  if (wav->size() == 44) {
    *error = "the " + name + " file holds no audio frames";
    return ZF_ERR_INVALID_ARGUMENT;
  }
  FinishWav(wav);
  return ZF_OK;
}

// MP3 and FLAC: miniaudio's decoder, mono float (its channels averaged) at the file's own rate.
zf_status DecodeMiniaudio(std::string_view bytes, const std::string& name, ma_encoding_format format,
                          double max_seconds, std::string* wav, std::string* error) {
  ma_decoder_config cfg = ma_decoder_config_init(ma_format_f32, 1, 0);  // 0: the file's rate
  cfg.encodingFormat = format;
  ma_decoder dec;
  const ma_result r = ma_decoder_init_memory(bytes.data(), bytes.size(), &cfg, &dec);
  if (r != MA_SUCCESS) {
    // MA_NO_BACKEND: the decoder found no stream it can read (miniaudio's words say otherwise).
    *error = Undecodable(name, r == MA_NO_BACKEND ? "no valid " + name + " stream in it (corrupt or truncated)"
                                                  : std::string(ma_result_description(r)));
    return ZF_ERR_INVALID_ARGUMENT;
  }
  const zf_status st = Collect(
      name, dec.outputSampleRate, max_seconds,
      [&dec](float* out, size_t n) -> int64_t {
        ma_uint64 got = 0;
        const ma_result rr = ma_decoder_read_pcm_frames(&dec, out, n, &got);
        return rr == MA_SUCCESS || rr == MA_AT_END ? int64_t(got) : -1;
      },
      wav, error);
  ma_decoder_uninit(&dec);
  return st;
}

// Ogg Vorbis: stb_vorbis directly, every allocation in our arena: its setup leaks temporary
// buffers when a corrupt header ends it early (found by fuzz_audio_request), and through an
// arena nothing it allocates can outlive the call.
zf_status DecodeVorbis(std::string_view bytes, double max_seconds, std::string* wav, std::string* error) {
  const std::string name = "Ogg Vorbis";
  std::unique_ptr<char[]> arena;
  stb_vorbis* v = nullptr;
  int err = 0;
  for (int cap = 1 << 20;; cap *= 2) {  // setup needs ~0.1-2 MB; a larger need is met by doubling
    arena.reset(new char[size_t(cap)]);
    stb_vorbis_alloc a{arena.get(), cap};
    v = stb_vorbis_open_memory(reinterpret_cast<const unsigned char*>(bytes.data()), int(bytes.size()), &err, &a);
    if (v != nullptr || err != VORBIS_outofmem || cap >= (64 << 20)) break;
  }
  if (v == nullptr) {
    *error = Undecodable(name, "no valid Ogg Vorbis stream in it (corrupt or truncated; stb_vorbis error " +
                                   std::to_string(err) + ")");
    return ZF_ERR_INVALID_ARGUMENT;
  }
  const stb_vorbis_info info = stb_vorbis_get_info(v);
  std::vector<float> inter;
  const zf_status st = Collect(
      name, info.sample_rate, max_seconds,
      [&](float* out, size_t n) -> int64_t {
        const int ch = std::max(info.channels, 1);
        inter.resize(n * size_t(ch));
        const int got = stb_vorbis_get_samples_float_interleaved(v, ch, inter.data(), int(inter.size()));
        for (int i = 0; i < got; ++i) {  // the channels averaged, as the WAV path does
          float sum = 0;
          for (int c = 0; c < ch; ++c) sum += inter[size_t(i) * size_t(ch) + size_t(c)];
          out[i] = sum / float(ch);
        }
        return got;
      },
      wav, error);
  stb_vorbis_close(v);
  return st;
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
    std::string wav;
    st = name == "Ogg Vorbis" ? DecodeVorbis(bytes, max_seconds, &wav, error)
                              : DecodeMiniaudio(bytes, name, name == "MP3" ? ma_encoding_format_mp3 : ma_encoding_format_flac,
                                                max_seconds, &wav, error);
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
