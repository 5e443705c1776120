# cmake -DCARGO= -DSRC= -DCACHE= -DTARGET_DIR= -DOUT= -DJOBS= -P build_llguidance.cmake
# Copies the cached llguidance archive to OUT, or builds it with cargo and caches it first
# (called from cmake/constraints.cmake).
set(_cached ${CACHE}/libzerfoo_llguidance.a)
if(NOT EXISTS ${_cached})
  string(TIMESTAMP _t0 "%s")
  execute_process(
    COMMAND ${CARGO} build --release --locked -j ${JOBS} --manifest-path ${SRC}/Cargo.toml
            --target-dir ${TARGET_DIR}
    RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "cargo build of llguidance failed (${_rc}); configure with -DZF_CONSTRAINTS=OFF "
      "to build without constrained decoding")
  endif()
  string(TIMESTAMP _t1 "%s")
  math(EXPR _dt "${_t1} - ${_t0}")
  message(STATUS "llguidance: cargo build took ${_dt} s")
  # Into the cache atomically (a concurrent build of another tree may race for the same key).
  file(MAKE_DIRECTORY ${CACHE})
  string(RANDOM LENGTH 8 _r)
  execute_process(COMMAND ${CMAKE_COMMAND} -E copy ${TARGET_DIR}/release/libzerfoo_llguidance.a ${CACHE}/.tmp.${_r})
  file(RENAME ${CACHE}/.tmp.${_r} ${_cached})
endif()
get_filename_component(_outdir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${_outdir})
execute_process(COMMAND ${CMAKE_COMMAND} -E copy ${_cached} ${OUT} RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "copying ${_cached} to ${OUT} failed")
endif()
