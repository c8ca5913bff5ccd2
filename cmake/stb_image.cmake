# stb_image for the image reader: Debian's header (stb_image 2.27) with the
# bounds check stb_image 2.28 added to its Huffman decoder. A corrupt JPEG
# otherwise makes 2.27 index its symbol tables with a negative number (found
# by the image_data fuzz target). Written to generated/qfx_stb_image.h, which
# src/io/data/image_folder_source.cpp includes.
set(QFX_STB_HEADER /usr/include/stb/stb_image.h)
file(READ ${QFX_STB_HEADER} QFX_STB)
set(QFX_STB_ANCHOR "   c = ((j->code_buffer >> (32 - k)) & stbi__bmask[k]) + h->delta[k];\n")
string(FIND "${QFX_STB}" "${QFX_STB_ANCHOR}" QFX_STB_AT)
if(QFX_STB_AT EQUAL -1)
  message(FATAL_ERROR "${QFX_STB_HEADER}: the Huffman decoder line qfx adds a bounds check after is not there; "
                      "check whether this stb_image has the check and update cmake/stb_image.cmake")
endif()
string(REPLACE "${QFX_STB_ANCHOR}"
               "${QFX_STB_ANCHOR}   if (c < 0 || c >= 256) return -1;  // symbol id out of bounds (stb_image 2.28)\n"
               QFX_STB "${QFX_STB}")
file(WRITE ${CMAKE_BINARY_DIR}/generated/qfx_stb_image.h.new "${QFX_STB}")
configure_file(${CMAKE_BINARY_DIR}/generated/qfx_stb_image.h.new ${CMAKE_BINARY_DIR}/generated/qfx_stb_image.h COPYONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${QFX_STB_HEADER})
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/src/io/data/image_folder_source.cpp
                            PROPERTIES INCLUDE_DIRECTORIES ${CMAKE_BINARY_DIR}/generated)
