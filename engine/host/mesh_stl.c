/* mesh_stl.c: STL files (binary and ASCII) to triangle soups through assimp's C API, after checks of our own that
 * name what is wrong with a file (truncated, extra bytes, too many triangles) before assimp sees it. */

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <assimp/cimport.h>
#include <assimp/scene.h>
#include "mesh_load.h"
#include "readfile.h"

/* An 80-byte header, a little-endian triangle count, then 50 bytes per triangle. */
#define STL_HEADER 84
#define STL_TRIANGLE 50

static int fail(char* err, int err_size, const char* what) {
  cqh_fail(err, err_size, "%s", what);
  return -1;
}

/* ASCII STL starts with "solid" (binary headers may too: a binary size match is tried first, and text has no 0 byte). */
static int starts_with_solid(const unsigned char* d, size_t size) {
  size_t i = 0;
  while (i < size && isspace(d[i])) i++;
  return size - i >= 5 && strncmp((const char*)d + i, "solid", 5) == 0;
}

/* ---- ASCII STL grammar, checked here so that a malformed file gets a message naming its line, and so that assimp
 * only parses text it reads exactly as we do (its ASCII reader leaks memory when it throws half-way, and it skips
 * words it does not know, so a misplaced keyword would shift its counts) ---- */

typedef struct scanner {
  const char* at; /* next character */
  const char* end;
  int line; /* 1-based line of `at` */
  char* err;
  int err_size;
} scanner;

/* assimp's separators: spaces and tabs within a line; \r and \n end one (it does not skip a form feed everywhere, so
 * that is no text). */
static int is_blank(char c) { return c == ' ' || c == '\t'; }
static int is_line_end(char c) { return c == '\n' || c == '\r'; }

/* The next token: its start in *tok and length in *len (0 at the end of the text, or, when on_line, at the end of the
 * line). */
static void next_token(scanner* s, int on_line, const char** tok, size_t* len) {
  while (s->at < s->end && (is_blank(*s->at) || (!on_line && is_line_end(*s->at)))) {
    if (*s->at == '\n') s->line++;
    s->at++;
  }
  *tok = s->at;
  while (s->at < s->end && !is_blank(*s->at) && !is_line_end(*s->at)) s->at++;
  *len = (size_t)(s->at - *tok);
}

static int is_word(const char* tok, size_t len, const char* word) {
  return len == strlen(word) && !strncmp(tok, word, len);
}

/* A token as messages show it: at most 40 characters. */
static const char* shown(const char* tok, size_t len, char* buf) {
  size_t n = len < 40 ? len : 40;
  memcpy(buf, tok, n);
  buf[n] = 0;
  return buf;
}

static int unexpected(scanner* s, const char* wanted, const char* tok, size_t len) {
  char buf[41];
  if (s->at >= s->end && (len == 0 || strncmp(wanted + 1, tok, len) == 0)) { /* nothing, or the start of the word */
    cqh_fail(s->err, s->err_size, "truncated ASCII STL: the file ends where %s should be (line %d)", wanted, s->line);
  } else if (len == 0) {
    cqh_fail(s->err, s->err_size, "ASCII STL line %d: the line ends where %s should be", s->line, wanted);
  } else {
    cqh_fail(s->err, s->err_size, "ASCII STL line %d: expected %s, found '%s'", s->line, wanted, shown(tok, len, buf));
  }
  return -1;
}

static int expect(scanner* s, int on_line, const char* word, const char* wanted) {
  const char* tok;
  size_t len;
  next_token(s, on_line, &tok, &len);
  return is_word(tok, len, word) ? 0 : unexpected(s, wanted, tok, len);
}

/* A decimal number as assimp's fast_atoreal_move reads all of it: [+-] digits [. digits] [e [+-] digits], at most 15
 * digits before the point (more overflow its integer) and 4 in the exponent. */
static int is_decimal(const char* t, size_t len) {
  size_t i = 0, whole = 0, frac = 0, exp = 0;
  if (i < len && (t[i] == '+' || t[i] == '-')) i++;
  while (i < len && isdigit((unsigned char)t[i])) i++, whole++;
  if (i < len && t[i] == '.') {
    i++;
    while (i < len && isdigit((unsigned char)t[i])) i++, frac++;
    if (frac == 0) return 0;
  }
  if (whole + frac == 0 || whole > 15) return 0;
  if (i < len && (t[i] == 'e' || t[i] == 'E')) {
    i++;
    if (i < len && (t[i] == '+' || t[i] == '-')) i++;
    while (i < len && isdigit((unsigned char)t[i])) i++, exp++;
    if (exp == 0 || exp > 4) return 0;
  }
  return i == len;
}

/* Three numbers on the current line. */
static int numbers(scanner* s, const char* what) {
  char buf[41];
  const char* tok;
  size_t len;
  int i;
  for (i = 0; i < 3; i++) {
    next_token(s, 1, &tok, &len);
    if (len == 0) return unexpected(s, what, tok, len);
    if (!is_decimal(tok, len)) {
      cqh_fail(s->err, s->err_size, "ASCII STL line %d: %s '%s' is not a decimal number (such as -1.25e-3)", s->line,
               what, shown(tok, len, buf));
      return -1;
    }
  }
  return 0;
}

/* The rest of a "solid" line: the solid's name, which must not hold a keyword assimp would act on. */
static int solid_name(scanner* s) {
  const char* tok;
  size_t len;
  int first = 1;
  for (;;) {
    next_token(s, 1, &tok, &len);
    if (len == 0) return 0;
    if (first && len >= 1000)
      return (cqh_fail(s->err, s->err_size, "ASCII STL line %d: the solid's name is too long", s->line), -1);
    if (is_word(tok, len, "facet") || is_word(tok, len, "vertex") || (len >= 8 && !strncmp(tok, "endsolid", 8))) {
      return unexpected(s, "the solid's name and a line end", tok, len);
    }
    first = 0;
  }
}

/* solid [name] { facet normal n n n / outer loop / (vertex x y z) x 3 / endloop / endfacet } endsolid [name], repeated;
 * counts the facets. */
static int check_ascii(const char* text, size_t size, size_t* facets, char* err, int err_size) {
  scanner s = {text, text + size, 1, err, err_size};
  const char* tok;
  size_t len, i;
  int v, line = 1;
  *facets = 0;
  for (i = 0; i < size; i++) { /* assimp takes other control characters and bytes above 127 for binary data */
    unsigned char c = (unsigned char)text[i];
    if (c == '\n') line++;
    if ((c < 32 || c > 126) && !is_blank((char)c) && !is_line_end((char)c)) {
      cqh_fail(err, err_size, "ASCII STL line %d: byte 0x%02X is not text", line, c);
      return -1;
    }
  }
  if (expect(&s, 0, "solid", "'solid'") != 0 || solid_name(&s) != 0) return -1;
  for (;;) {
    next_token(&s, 0, &tok, &len);
    if (len >= 8 && !strncmp(tok, "endsolid", 8)) {
      while (s.at < s.end && !is_line_end(*s.at)) s.at++;
      next_token(&s, 0, &tok, &len);
      if (len == 0) return 0;
      if (!is_word(tok, len, "solid"))
        return unexpected(&s, "'solid' or the end of the file after 'endsolid'", tok, len);
      if (solid_name(&s) != 0) return -1;
      continue;
    }
    if (!is_word(tok, len, "facet")) return unexpected(&s, "'facet' or 'endsolid'", tok, len);
    if (expect(&s, 1, "normal", "'normal' (on the line of 'facet')") != 0 || numbers(&s, "a normal coordinate") != 0 ||
        expect(&s, 0, "outer", "'outer loop'") != 0 || expect(&s, 1, "loop", "'loop' (after 'outer')") != 0) {
      return -1;
    }
    for (v = 0; v < 3; v++) {
      if (expect(&s, 0, "vertex", v == 0 ? "'vertex'" : "'vertex' (a facet has 3)") != 0 ||
          numbers(&s, "a vertex coordinate") != 0) {
        return -1;
      }
    }
    if (expect(&s, 0, "endloop", "'endloop'") != 0 || expect(&s, 0, "endfacet", "'endfacet'") != 0) return -1;
    ++*facets;
  }
}

/* Copies the triangles of every mesh of an imported scene into out. */
static int soup_of_scene(const struct aiScene* s, int max_triangles, cqi_soup* out, char* err, int err_size) {
  size_t n = 0, t = 0;
  unsigned i, f, k;
  for (i = 0; i < s->mNumMeshes; i++) n += s->mMeshes[i]->mNumFaces;
  if (n == 0) return fail(err, err_size, "the STL file has no triangles");
  if (n > (size_t)max_triangles) {
    cqh_fail(err, err_size, "the STL file has %zu triangles, more than the limit of %d", n, max_triangles);
    return -1;
  }
  out->xyz = malloc(9 * n * sizeof *out->xyz);
  if (out->xyz == NULL) return fail(err, err_size, "out of memory for the triangles");
  for (i = 0; i < s->mNumMeshes; i++) {
    const struct aiMesh* m = s->mMeshes[i];
    for (f = 0; f < m->mNumFaces; f++) {
      const struct aiFace* face = &m->mFaces[f];
      if (face->mNumIndices != 3) continue; /* assimp's STL reader makes triangles only */
      for (k = 0; k < 3; k++) {
        unsigned v = face->mIndices[k];
        if (v >= m->mNumVertices) {
          free(out->xyz);
          out->xyz = NULL;
          return fail(err, err_size, "the STL reader gave a vertex index out of range");
        }
        out->xyz[9 * t + 3 * k + 0] = m->mVertices[v].x;
        out->xyz[9 * t + 3 * k + 1] = m->mVertices[v].y;
        out->xyz[9 * t + 3 * k + 2] = m->mVertices[v].z;
      }
      t++;
    }
  }
  out->n = (int)t;
  if (t == 0) {
    free(out->xyz);
    out->xyz = NULL;
    return fail(err, err_size, "the STL file has no triangles");
  }
  return 0;
}

int cqi_stl_soup(const unsigned char* data, size_t size, int max_triangles, cqi_soup* out, char* err, int err_size) {
  unsigned long long count = 0, expect = 0;
  const struct aiScene* scene;
  int status;
  out->n = 0;
  out->xyz = NULL;
  if (size >= STL_HEADER) {
    count = (unsigned long long)data[80] | (unsigned long long)data[81] << 8 | (unsigned long long)data[82] << 16 |
            (unsigned long long)data[83] << 24;
    expect = STL_HEADER + STL_TRIANGLE * count;
  }
  if (size >= STL_HEADER && expect == size) {
    if (count == 0) return fail(err, err_size, "the binary STL file has no triangles (its header says 0)");
    if (count > (unsigned long long)max_triangles) {
      cqh_fail(err, err_size, "the binary STL file has %llu triangles, more than the limit of %d", count,
               max_triangles);
      return -1;
    }
  } else if (starts_with_solid(data, size) && memchr(data, 0, size) == NULL) { /* binary files hold 0 bytes */
    size_t facets;
    while (isspace(*data)) data++, size--; /* assimp wants "solid" first */
    if (check_ascii((const char*)data, size, &facets, err, err_size) != 0) return -1;
    if (facets == 0) return fail(err, err_size, "the ASCII STL file has no triangles (no facet)");
    if (facets > (size_t)max_triangles) {
      cqh_fail(err, err_size, "the ASCII STL file has %zu triangles, more than the limit of %d", facets, max_triangles);
      return -1;
    }
  } else if (size < STL_HEADER) {
    cqh_fail(err, err_size,
             "not an STL file: %zu bytes are too few for a binary STL (84-byte header) and it does not start "
             "with 'solid' like an ASCII STL",
             size);
    return -1;
  } else if (expect > size) {
    cqh_fail(err, err_size,
             "truncated binary STL: its header says %llu triangles (%llu bytes) but the file has %zu bytes", count,
             expect, size);
    return -1;
  } else {
    cqh_fail(err, err_size,
             "not a valid binary STL: its header says %llu triangles (%llu bytes) but the file has %zu bytes "
             "(%llu too many)",
             count, expect, size, (unsigned long long)size - expect);
    return -1;
  }
  scene = aiImportFileFromMemory((const char*)data, (unsigned)size, 0, "stl");
  if (scene == NULL) {
    cqh_fail(err, err_size, "cannot parse the STL file (assimp: %s)", aiGetErrorString());
    return -1;
  }
  status = soup_of_scene(scene, max_triangles, out, err, err_size);
  aiReleaseImport(scene);
  return status;
}
