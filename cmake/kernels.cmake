# libzerfoo_kernels.so: the CUDA kernel library (kernels/*.cu), built by nvcc when one is found.
# nvcc is driven directly (custom commands), not through CMake's CUDA language, so a toolkit
# installed from PyPI (scripts/install_cuda_toolkit.sh) works without a system CUDA install.
# The CUDA runtime is linked statically: a GPU host needs only the NVIDIA driver.
set(ZF_BUILD_KERNELS AUTO CACHE STRING "Build the CUDA kernel library: AUTO (when nvcc is found), ON, OFF")
set_property(CACHE ZF_BUILD_KERNELS PROPERTY STRINGS AUTO ON OFF)
set(ZF_NVCC "" CACHE FILEPATH "nvcc for the kernel library (default: CMAKE_CUDA_COMPILER, PATH, CUDA_HOME, the install_cuda_toolkit.sh cache)")
set(ZF_CUDA_ARCHS "80;90" CACHE STRING "GPU architectures compiled to SASS")
set(ZF_CUDA_PTX_ARCH "90" CACHE STRING "Architecture whose PTX is embedded (JIT for newer GPUs)")

set(ZF_KERNELS_BUILT OFF)
if(NOT ZF_BUILD_KERNELS STREQUAL "OFF")
  set(_nvcc "${ZF_NVCC}")
  if(NOT _nvcc AND CMAKE_CUDA_COMPILER)
    set(_nvcc "${CMAKE_CUDA_COMPILER}")
  endif()
  if(NOT _nvcc)
    file(GLOB _pip_bins LIST_DIRECTORIES true "$ENV{HOME}/.cache/zerfoo/cuda/*/nvidia/cu13/bin")
    find_program(ZF_NVCC_FOUND nvcc HINTS "$ENV{CUDA_HOME}/bin" /usr/local/cuda/bin ${_pip_bins})
    if(ZF_NVCC_FOUND)
      set(_nvcc "${ZF_NVCC_FOUND}")
    endif()
  endif()
  if(_nvcc)
    set(ZF_KERNELS_BUILT ON)
    set(ZF_NVCC_EXE "${_nvcc}")
    message(STATUS "CUDA kernel library: building with ${_nvcc} (SASS ${ZF_CUDA_ARCHS}, PTX ${ZF_CUDA_PTX_ARCH})")
  elseif(ZF_BUILD_KERNELS STREQUAL "ON")
    message(FATAL_ERROR "ZF_BUILD_KERNELS=ON but no nvcc was found: run scripts/install_cuda_toolkit.sh and pass -DZF_NVCC=<its output>")
  else()
    message(STATUS "CUDA kernel library: not built (no nvcc found; scripts/install_cuda_toolkit.sh installs one)")
  endif()
endif()

if(ZF_KERNELS_BUILT)
  set(_kdir ${PROJECT_SOURCE_DIR}/kernels)
  file(GLOB _cu CONFIGURE_DEPENDS ${_kdir}/*.cu)
  file(GLOB _cuh CONFIGURE_DEPENDS ${_kdir}/*.cuh ${_kdir}/zfk.h)
  set(_gencode "")
  foreach(a ${ZF_CUDA_ARCHS})
    list(APPEND _gencode "-gencode=arch=compute_${a},code=sm_${a}")
  endforeach()
  list(APPEND _gencode "-gencode=arch=compute_${ZF_CUDA_PTX_ARCH},code=compute_${ZF_CUDA_PTX_ARCH}")
  # The compiled architectures, for zfk_supports_cc (a header: nvcc splits -D values at commas).
  string(REPLACE ";" ", " _sass_list "${ZF_CUDA_ARCHS}")
  file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/kernels/zfk_build_config.h
    CONTENT "#define ZFK_SASS_ARCHS ${_sass_list}\n#define ZFK_PTX_ARCH ${ZF_CUDA_PTX_ARCH}\n")
  set(_flags -std=c++17 -O3 -I${_kdir} -I${PROJECT_BINARY_DIR}/kernels -Xcompiler=-fPIC,-fvisibility=hidden
      -DZFK_HAVE_BUILD_CONFIG ${_gencode})
  set(_objs "")
  # nvcc through the C++ compiler launcher too (ccache understands nvcc: scripts/ccache_env.sh).
  foreach(src ${_cu})
    get_filename_component(_name ${src} NAME_WE)
    set(_obj ${PROJECT_BINARY_DIR}/kernels/${_name}.o)
    add_custom_command(OUTPUT ${_obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/kernels
      COMMAND ${CMAKE_CXX_COMPILER_LAUNCHER} ${_nvcc} ${_flags} -c ${src} -o ${_obj}
      DEPENDS ${src} ${_cuh} ${PROJECT_BINARY_DIR}/kernels/zfk_build_config.h
      COMMENT "nvcc kernels/${_name}.cu" VERBATIM)
    list(APPEND _objs ${_obj})
  endforeach()
  # Next to libzerfoo.so in the build tree: the first place the loader looks.
  set(ZF_KERNELS_LIBRARY ${PROJECT_BINARY_DIR}/libzerfoo_kernels.so)
  add_custom_command(OUTPUT ${ZF_KERNELS_LIBRARY}
    COMMAND ${_nvcc} -shared -cudart static ${_gencode} -Xcompiler=-static-libstdc++,-static-libgcc
            -Xlinker=--version-script=${_kdir}/zfk.map -Xlinker=--no-undefined ${_objs} -o ${ZF_KERNELS_LIBRARY}
    DEPENDS ${_objs} ${_kdir}/zfk.map COMMENT "nvcc -shared libzerfoo_kernels.so (CUDA runtime static)" VERBATIM)
  add_custom_target(zerfoo_kernels ALL DEPENDS ${ZF_KERNELS_LIBRARY})
  install(FILES ${ZF_KERNELS_LIBRARY} DESTINATION ${CMAKE_INSTALL_LIBDIR}
    PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endif()
