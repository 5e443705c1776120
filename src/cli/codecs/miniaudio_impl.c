/* miniaudio's decoders (MP3, FLAC, WAV) and stb_vorbis (Ogg Vorbis) compiled once, decoding
 * only: no device I/O, no encoding, no engine, no threads. Linked statically into the `zerfoo`
 * CLI (cmake/audio_codecs.cmake); the headers come from scripts/fetch_miniaudio.sh. */
#define STB_VORBIS_HEADER_ONLY
#include "stb_vorbis.c"

#define MA_NO_DEVICE_IO
#define MA_NO_THREADING
#define MA_NO_ENCODING
#define MA_NO_GENERATION
#define MA_NO_ENGINE
#define MA_NO_NODE_GRAPH
#define MA_NO_RESOURCE_MANAGER
#define MA_NO_RUNTIME_LINKING
#define MINIAUDIO_IMPLEMENTATION
#include "miniaudio.h"

/* stb_vorbis's implementation after miniaudio's, as miniaudio's documentation asks. */
#undef STB_VORBIS_HEADER_ONLY
#include "stb_vorbis.c"
