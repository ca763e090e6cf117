# embed_file.cmake - turns a text file into a C source holding it as a
# NUL-terminated byte array, so kernels travel inside the library.
# Usage: cmake -DINPUT=kernels/sha1.cl -DOUTPUT=x.c -DSYMBOL=name -P embed_file.cmake
file(READ "${INPUT}" content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
  "/* Generated from ${name} by cmake/embed_file.cmake; do not edit. */\n"
  "#include <stddef.h>\n"
  "const char ${SYMBOL}[] = {\n${bytes}0x00\n};\n"
  "const size_t ${SYMBOL}_size = sizeof(${SYMBOL}) - 1;\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
