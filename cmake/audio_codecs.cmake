# MP3, FLAC and Ogg Vorbis decoding for the `zerfoo` CLI and server (never libzerfoo.so, which
# decodes WAV only): miniaudio + stb_vorbis, single-file C libraries fetched checksum-pinned from
# PyPI's `miniaudio` sdist by scripts/fetch_miniaudio.sh into ~/.cache/zerfoo (or $ZF_CACHE_DIR)
# and compiled into the static library zf_audio_codecs. ZF_AUDIO_CODECS: AUTO (on when the fetch
# works), ON (fail without it) or OFF (those containers are named and refused).
# Defines ZF_AUDIO_CODECS_FOUND; targets link zf_audio_codecs and define ZF_HAVE_MINIAUDIO=1.
set(ZF_AUDIO_CODECS AUTO CACHE STRING "MP3/FLAC/Ogg decoding in the CLI through miniaudio: AUTO, ON or OFF")
set(ZF_AUDIO_CODECS_FOUND OFF)
if(NOT ZF_AUDIO_CODECS STREQUAL "OFF")
  set(_ma_env)
  if(DEFINED ENV{ZF_CACHE_DIR})
    set(_ma_env ZF_CACHE_DIR=$ENV{ZF_CACHE_DIR})
  endif()
  # Re-run when the script (its version, checksum or patch) changes.
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scripts/fetch_miniaudio.sh)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${_ma_env} ${PROJECT_SOURCE_DIR}/scripts/fetch_miniaudio.sh
                  OUTPUT_VARIABLE _ma_dir ERROR_VARIABLE _ma_err RESULT_VARIABLE _ma_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_ma_rc EQUAL 0 AND EXISTS "${_ma_dir}/miniaudio.h")
    set(ZF_AUDIO_CODECS_FOUND ON)
  elseif(ZF_AUDIO_CODECS STREQUAL "ON")
    message(FATAL_ERROR "ZF_AUDIO_CODECS=ON: scripts/fetch_miniaudio.sh failed:\n${_ma_err}")
  else()
    message(STATUS "Audio codecs: off (scripts/fetch_miniaudio.sh failed; MP3/FLAC/Ogg are refused by name)")
  endif()
endif()
if(ZF_AUDIO_CODECS_FOUND)
  message(STATUS "Audio codecs: MP3, FLAC, Ogg Vorbis through miniaudio (${_ma_dir})")
  add_library(zf_audio_codecs STATIC ${PROJECT_SOURCE_DIR}/src/cli/codecs/miniaudio_impl.c)
  # Third-party code: its own warnings are not ours to fix. -O1: at -O3 this one file took 30 s of
  # CPU to compile (5.7 s at -O1), in two of CI's builds, to decode a clip once per request.
  target_compile_options(zf_audio_codecs PRIVATE -w -O1)
  if("undefined" IN_LIST ZF_SANITIZE)
    # Under UBSan: stb_vorbis and dr_mp3/dr_flac shift negative values, let integer sums wrap and
    # cast out-of-range floats to int in their bit readers, filters and header math (each
    # compiler we use gives them a value; a bad value is a refused stream): those checks are off
    # in this library only. ASan still checks its every memory access.
    target_compile_options(zf_audio_codecs PRIVATE -fno-sanitize=shift,signed-integer-overflow,float-cast-overflow)
  endif()
  target_include_directories(zf_audio_codecs PRIVATE ${_ma_dir})
  target_include_directories(zf_audio_codecs SYSTEM INTERFACE ${_ma_dir})
  target_link_libraries(zf_audio_codecs PUBLIC m)
  target_compile_definitions(zf_audio_codecs INTERFACE ZF_HAVE_MINIAUDIO=1)
endif()
