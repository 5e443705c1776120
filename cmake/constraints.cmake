# Constrained decoding (JSON schema, regex, choice, Lark; doc/constraints.md) through llguidance,
# a Rust library built here with cargo as a static archive (third_party/llguidance) and linked
# into libzerfoo.so privately: its llg_* symbols stay local (src/capi/zerfoo.map and
# --exclude-libs), and it needs nothing at run time beyond libc, so the library gains no
# dependency. Without cargo the feature compiles out (ZF_HAVE_CONSTRAINTS=0) and a constrained
# request fails with ZF_ERR_UNSUPPORTED.
#
#   -DZF_CONSTRAINTS=AUTO (default): on when cargo is found (PATH or ~/.cargo/bin) and the build
#                                    is not a cross build; OFF: never; ON: cargo is required.
#
# The built archive is cached under $ZF_CACHE_DIR or ~/.cache/zerfoo/llguidance/<key>, the key
# hashing Cargo.toml, Cargo.lock, src/lib.rs, rustc's version and the C compiler's target, so
# that every build tree of a machine (release, clang sanitizers, fuzzers) builds it once.
# Linking the uninstrumented Rust code into an ASan/UBSan build is fine (it allocates through
# the same malloc the sanitizer intercepts, and it runs only on the calling thread: the rayon
# feature is off); ThreadSanitizer builds use ZF_CONSTRAINTS=OFF (scripts/test.sh), since
# synchronization inside uninstrumented code can show up as false races.
set(ZF_CONSTRAINTS AUTO CACHE STRING "Constrained decoding through llguidance (needs cargo): AUTO, ON or OFF")
set_property(CACHE ZF_CONSTRAINTS PROPERTY STRINGS AUTO ON OFF)

set(ZF_HAVE_CONSTRAINTS OFF)
if(ZF_CONSTRAINTS STREQUAL "OFF")
  message(STATUS "Constrained decoding: off (-DZF_CONSTRAINTS=OFF)")
else()
  find_program(ZF_CARGO cargo HINTS "$ENV{CARGO_HOME}/bin" "$ENV{HOME}/.cargo/bin")
  find_program(ZF_RUSTC rustc HINTS "$ENV{CARGO_HOME}/bin" "$ENV{HOME}/.cargo/bin")
  if(CMAKE_CROSSCOMPILING AND ZF_CONSTRAINTS STREQUAL "AUTO")
    message(STATUS "Constrained decoding: off (cross build; cargo would build for the host)")
  elseif(ZF_CARGO AND ZF_RUSTC)
    set(ZF_HAVE_CONSTRAINTS ON)
  elseif(ZF_CONSTRAINTS STREQUAL "ON")
    message(FATAL_ERROR "ZF_CONSTRAINTS=ON but cargo/rustc were not found (install Rust with rustup, "
      "or configure with -DZF_CONSTRAINTS=OFF)")
  else()
    message(STATUS "Constrained decoding: off (cargo not found; -DZF_CONSTRAINTS=AUTO)")
  endif()
endif()

if(NOT ZF_HAVE_CONSTRAINTS)
  target_compile_definitions(zerfoo_core PUBLIC ZF_HAVE_CONSTRAINTS=0)
  return()
endif()

set(_llg_src ${PROJECT_SOURCE_DIR}/third_party/llguidance)
execute_process(COMMAND ${ZF_RUSTC} -vV OUTPUT_VARIABLE _llg_rustc_version OUTPUT_STRIP_TRAILING_WHITESPACE)
set(_llg_key_text "${_llg_rustc_version}\n${CMAKE_C_COMPILER_TARGET}\n${CMAKE_SYSTEM_PROCESSOR}\n")
foreach(f Cargo.toml Cargo.lock src/lib.rs)
  file(SHA256 ${_llg_src}/${f} _h)
  string(APPEND _llg_key_text "${f} ${_h}\n")
endforeach()
string(SHA256 _llg_key "${_llg_key_text}")
string(SUBSTRING "${_llg_key}" 0 16 _llg_key)
if(DEFINED ENV{ZF_CACHE_DIR})
  set(_llg_cache_root "$ENV{ZF_CACHE_DIR}")
else()
  set(_llg_cache_root "$ENV{HOME}/.cache/zerfoo")
endif()
set(ZF_LLG_CACHE "${_llg_cache_root}/llguidance/${_llg_key}")
set(ZF_LLG_LIB ${CMAKE_BINARY_DIR}/llguidance/libzerfoo_llguidance.a)
if(NOT EXISTS ${ZF_LLG_CACHE}/libzerfoo_llguidance.a)
  # Not cached: the crates must be downloadable (or already in ~/.cargo/registry). AUTO turns
  # the feature off rather than fail the build later on a machine that cannot reach crates.io.
  execute_process(COMMAND ${ZF_CARGO} fetch --locked --manifest-path ${_llg_src}/Cargo.toml
                  RESULT_VARIABLE _llg_fetch OUTPUT_QUIET ERROR_VARIABLE _llg_fetch_err)
  if(NOT _llg_fetch EQUAL 0)
    if(ZF_CONSTRAINTS STREQUAL "ON")
      message(FATAL_ERROR "ZF_CONSTRAINTS=ON: cargo fetch of llguidance's crates failed:\n${_llg_fetch_err}")
    endif()
    message(STATUS "Constrained decoding: off (cargo fetch of llguidance's crates failed; -DZF_CONSTRAINTS=AUTO)")
    set(ZF_HAVE_CONSTRAINTS OFF)
    target_compile_definitions(zerfoo_core PUBLIC ZF_HAVE_CONSTRAINTS=0)
    return()
  endif()
endif()
message(STATUS "Constrained decoding: on (llguidance via ${ZF_CARGO}; archive cache ${ZF_LLG_CACHE})")

# The archive comes from the cache when present; otherwise cargo builds it (--locked: exactly
# Cargo.lock's versions; jobs as CMake's own build was given, default 2) and fills the cache.
set(ZF_CARGO_JOBS 2 CACHE STRING "cargo build -j for llguidance")
add_custom_command(
  OUTPUT ${ZF_LLG_LIB}
  COMMAND ${CMAKE_COMMAND} -DCARGO=${ZF_CARGO} -DSRC=${_llg_src} -DCACHE=${ZF_LLG_CACHE}
          -DTARGET_DIR=${CMAKE_BINARY_DIR}/llguidance/target -DOUT=${ZF_LLG_LIB} -DJOBS=${ZF_CARGO_JOBS}
          -P ${PROJECT_SOURCE_DIR}/cmake/build_llguidance.cmake
  DEPENDS ${_llg_src}/Cargo.toml ${_llg_src}/Cargo.lock ${_llg_src}/src/lib.rs
          ${PROJECT_SOURCE_DIR}/cmake/build_llguidance.cmake
  COMMENT "llguidance static library (cargo, or the cache ${ZF_LLG_CACHE})"
  USES_TERMINAL VERBATIM)
add_custom_target(zf_llguidance_build DEPENDS ${ZF_LLG_LIB})
add_library(zf_llguidance STATIC IMPORTED GLOBAL)
set_target_properties(zf_llguidance PROPERTIES IMPORTED_LOCATION ${ZF_LLG_LIB})
# What Rust's std needs from the system (rustc --print native-static-libs: gcc_s, util, rt,
# pthread, m, dl, c). libgcc_s is left out on purpose: the unwinder comes from libgcc_eh, which
# -static-libgcc links anyway, so the library does not gain libgcc_s.so as a dependency.
set_target_properties(zf_llguidance PROPERTIES INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS};m;rt")
add_dependencies(zf_llguidance zf_llguidance_build)
target_include_directories(zerfoo_core PRIVATE ${_llg_src}/include)
target_link_libraries(zerfoo_core PRIVATE zf_llguidance)
target_compile_definitions(zerfoo_core PUBLIC ZF_HAVE_CONSTRAINTS=1)
target_link_options(zerfoo PRIVATE "-Wl,--exclude-libs,libzerfoo_llguidance.a")
