# stb_image for the image reader: Debian's header (stb_image 2.27) with the
# bounds checks stb_image 2.28 added to its JPEG bitstream decoder. On a
# corrupt JPEG, 2.27 indexes its Huffman tables with a negative symbol id,
# lets its bit count go negative (then shifts by it) and overflows the DC
# coefficient's sum and product (found by the image_data fuzz target).
# Written to generated/qfx_stb_image.h, which
# src/io/data/image_folder_source.cpp includes.
set(QFX_STB_HEADER /usr/include/stb/stb_image.h)
file(READ ${QFX_STB_HEADER} QFX_STB)

# Replaces ANCHOR, which must occur COUNT times in the header, by REPLACEMENT.
function(qfx_stb_patch ANCHOR COUNT REPLACEMENT)
  string(REPLACE "${ANCHOR}" "" without "${QFX_STB}")
  string(LENGTH "${QFX_STB}" all)
  string(LENGTH "${without}" rest)
  string(LENGTH "${ANCHOR}" one)
  math(EXPR found "(${all} - ${rest}) / ${one}")
  if(NOT found EQUAL COUNT)
    message(FATAL_ERROR "${QFX_STB_HEADER}: '${ANCHOR}' occurs ${found} times, not ${COUNT}; check whether this "
                        "stb_image has the bounds checks qfx adds and update cmake/stb_image.cmake")
  endif()
  string(REPLACE "${ANCHOR}" "${REPLACEMENT}" patched "${QFX_STB}")
  set(QFX_STB "${patched}" PARENT_SCOPE)
endfunction()

# The Huffman decoder's symbol id stays within the 256-entry tables.
set(anchor "   c = ((j->code_buffer >> (32 - k)) & stbi__bmask[k]) + h->delta[k];\n")
qfx_stb_patch("${anchor}" 1 "${anchor}   if (c < 0 || c >= 256) return -1;\n")
# Reading past the end of the bitstream gives zeros, never a negative bit count.
foreach(bits n 1)
  set(anchor "   if (j->code_bits < ${bits}) stbi__grow_buffer_unsafe(j);\n")
  set(count 1)
  if(bits STREQUAL n)
    set(count 2)
  endif()
  qfx_stb_patch("${anchor}" ${count} "${anchor}   if (j->code_bits < ${bits}) return 0;\n")
endforeach()
# The fast AC path consumes no more bits than the buffer holds.
set(anchor "s = r & 15; // combined length\n")
qfx_stb_patch("${anchor}" 2 "${anchor}if (s > j->code_bits) return stbi__err(\"bad huffman code\", \"Corrupt JPEG\");\n")
# The DC coefficient's running sum fits an int and its scaled value a short.
set(anchor "// decode one 64-entry block--\n")
qfx_stb_patch("${anchor}" 1 "static int stbi__qfx_dc_valid(int pred, int diff, int scale)
{
   long long dc = (long long) pred + diff;
   return dc >= INT_MIN && dc <= INT_MAX && dc * scale >= SHRT_MIN && dc * scale <= SHRT_MAX;
}

${anchor}")
# (the scale is dequant[0] in a baseline block, 1 << succ_low in a progressive one)
foreach(indent_scale "   |dequant[0]" "      |(1 << j->succ_low)")
  string(REPLACE "|" ";" indent_scale "${indent_scale}")
  list(GET indent_scale 0 indent)
  list(GET indent_scale 1 scale)
  string(CONCAT anchor "${indent}dc = j->img_comp[b].dc_pred + diff;\n${indent}j->img_comp[b].dc_pred = dc;\n"
                       "${indent}data[0] = (short) (dc * ${scale});\n")
  string(CONCAT check "${indent}if (!stbi__qfx_dc_valid(j->img_comp[b].dc_pred, diff, ${scale}))\n"
                      "${indent}   return stbi__err(\"bad delta\", \"Corrupt JPEG\");\n")
  qfx_stb_patch("${anchor}" 1 "${check}${anchor}")
endforeach()

file(WRITE ${CMAKE_BINARY_DIR}/generated/qfx_stb_image.h.new "${QFX_STB}")
configure_file(${CMAKE_BINARY_DIR}/generated/qfx_stb_image.h.new ${CMAKE_BINARY_DIR}/generated/qfx_stb_image.h COPYONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${QFX_STB_HEADER})
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/src/io/data/image_folder_source.cpp
                            PROPERTIES INCLUDE_DIRECTORIES ${CMAKE_BINARY_DIR}/generated)
