/* msh.c: Gmsh MSH 4.1 files, ASCII and binary, read by hand for robot:gmsh (no maintained MIT/BSD C library reads
 * MSH 4.1, and gmsh's own API is GPL: gmsh runs only as a subprocess). Every count is checked against the bytes left
 * before anything is allocated; every failure names the section, the line (ASCII) or byte offset (binary), what was
 * expected and what was found. Host side, reached through ffi.C (engine/host/msh.h). */

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "msh.h"
#include "readfile.h"

#define MAX_ELEMENTS (INT_MAX / 4) /* 4 ints per tetrahedron must stay indexable by int */
#define MAX_NAME 1024              /* bytes of a physical group's name */

typedef struct reader {
  const unsigned char* d;
  size_t size;
  size_t at;           /* next byte */
  int line;            /* 1-based line of `at` (ASCII files) */
  int binary;          /* numbers in sections after $MeshFormat are binary */
  int swap;            /* ... and in the other byte order */
  int sz;              /* bytes of a binary size_t (the header's data-size: 4 or 8) */
  int offsets;         /* messages give byte offsets, not lines (binary files after their header) */
  const char* section; /* for messages: "$Nodes" */
  char* err;
  int err_size;
} reader;

static int fail(reader* r, const char* fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int fail(reader* r, const char* fmt, ...) {
  char what[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (r->offsets)
    cqh_fail(r->err, r->err_size, "MSH %s, byte %zu: %s", r->section, r->at, what);
  else
    cqh_fail(r->err, r->err_size, "MSH %s, line %d: %s", r->section, r->line, what);
  return -1;
}

/* ---- ASCII tokens ---- */

static void skip_space(reader* r) {
  while (r->at < r->size && isspace(r->d[r->at])) {
    if (r->d[r->at] == '\n') r->line++;
    r->at++;
  }
}

/* The next whitespace-separated token: its start in *t, its length returned (0 at the end of the file). */
static size_t token(reader* r, const unsigned char** t) {
  skip_space(r);
  *t = r->d + r->at;
  while (r->at < r->size && !isspace(r->d[r->at])) r->at++;
  return (size_t)(r->d + r->at - *t);
}

/* A token as messages show it: at most 40 characters, unprintable bytes as '?'. */
static const char* shown(const unsigned char* t, size_t len, char* buf) {
  size_t i, n = len < 40 ? len : 40;
  for (i = 0; i < n; i++) buf[i] = isprint(t[i]) ? (char)t[i] : '?';
  buf[n] = 0;
  return buf;
}

static int unexpected(reader* r, const char* what, const unsigned char* t, size_t len) {
  char buf[41];
  if (len == 0) return fail(r, "the file ends where %s should be (truncated file?)", what);
  r->at = (size_t)(t - r->d); /* point at the token */
  return fail(r, "expected %s, found '%s'", what, shown(t, len, buf));
}

/* An optionally signed decimal integer that fits a long long. */
static int parse_integer(const unsigned char* t, size_t len, long long* v) {
  size_t i = 0;
  int neg = 0;
  long long x = 0;
  if (i < len && (t[i] == '+' || t[i] == '-')) neg = t[i++] == '-';
  if (i == len) return 0;
  for (; i < len; i++) {
    int digit = t[i] - '0';
    if (digit < 0 || digit > 9 || x > (LLONG_MAX - digit) / 10) return 0;
    x = 10 * x + digit;
  }
  *v = neg ? -x : x;
  return 1;
}

/* ---- numbers, ASCII or binary ---- */

/* n raw bytes of a binary number, turned to this machine's byte order. */
static int raw(reader* r, void* out, size_t n, const char* what) {
  unsigned char* b = out;
  size_t i;
  if (r->size - r->at < n) {
    return fail(r, "the file ends where %s should be (%zu bytes wanted, %zu left: truncated file?)", what, n,
                r->size - r->at);
  }
  memcpy(out, r->d + r->at, n);
  if (r->swap) {
    for (i = 0; i < n / 2; i++) {
      unsigned char c = b[i];
      b[i] = b[n - 1 - i];
      b[n - 1 - i] = c;
    }
  }
  r->at += n;
  return 0;
}

/* An integer in [lo, hi]: a token in ASCII, in binary a 4-byte int (is_size = 0) or a data-size unsigned (1). */
static int integer(reader* r, int is_size, const char* what, long long lo, long long hi, long long* v) {
  size_t start = r->at;
  if (!r->binary) {
    const unsigned char* t;
    size_t len = token(r, &t);
    char want[200];
    if (lo == INT_MIN && hi == INT_MAX)
      snprintf(want, sizeof want, "%s (an integer)", what);
    else if (hi >= INT_MAX)
      snprintf(want, sizeof want, "%s (an integer >= %lld)", what, lo);
    else
      snprintf(want, sizeof want, "%s (an integer from %lld to %lld)", what, lo, hi);
    if (len == 0 || !parse_integer(t, len, v) || *v < lo || *v > hi) return unexpected(r, want, t, len);
    return 0;
  }
  if (!is_size) {
    int32_t x = 0;
    if (raw(r, &x, 4, what)) return -1;
    *v = x;
  } else if (r->sz == 4) {
    uint32_t x = 0;
    if (raw(r, &x, 4, what)) return -1;
    *v = x;
  } else {
    uint64_t x = 0;
    if (raw(r, &x, 8, what)) return -1;
    *v = x > (uint64_t)LLONG_MAX ? LLONG_MAX : (long long)x;
  }
  if (*v < lo || *v > hi) {
    r->at = start;
    return fail(r, "%s is %lld, expected an integer from %lld to %lld", what, *v, lo, hi);
  }
  return 0;
}

/* A finite number: a decimal token in ASCII, an 8-byte double in binary. */
static int real(reader* r, const char* what, double* v) {
  size_t start = r->at;
  if (!r->binary) {
    const unsigned char* t;
    char buf[64], *end;
    size_t len = token(r, &t);
    char want[200];
    snprintf(want, sizeof want, "%s (a number)", what);
    if (len == 0 || len >= sizeof buf) return unexpected(r, want, t, len);
    memcpy(buf, t, len);
    buf[len] = 0;
    *v = strtod(buf, &end);
    if (end != buf + len) return unexpected(r, want, t, len);
  } else if (raw(r, v, 8, what)) {
    return -1;
  }
  if (!isfinite(*v)) {
    r->at = start;
    return fail(r, "%s is not a finite number", what);
  }
  return 0;
}

/* Refuses count items of at least `each` bytes when fewer bytes are left: no allocation follows from a count the
 * file cannot hold. Binary numbers take their size; ASCII ones at least 2 bytes (a digit and a separator). */
static int room(reader* r, long long count, size_t each, const char* what) {
  size_t left = r->size - r->at + 1; /* the last item needs no separator */
  if (count > MAX_ELEMENTS || (unsigned long long)count > left / each) {
    return fail(r, "%lld %s need at least %zu bytes, but only %zu are left (truncated or corrupt file)", count, what,
                (size_t)count * each, left - 1);
  }
  return 0;
}

/* Bytes per number for room(): a binary size of data-size, int or double; 2 in ASCII. */
static size_t nb(const reader* r, size_t binary_bytes) { return r->binary ? binary_bytes : 2; }

/* Expects the token `word` (a section's end, e.g. "$EndNodes"). */
static int expect(reader* r, const char* word) {
  const unsigned char* t;
  size_t len = token(r, &t);
  char want[80];
  if (len == strlen(word) && memcmp(t, word, len) == 0) return 0;
  snprintf(want, sizeof want, "'%s'", word);
  return unexpected(r, want, t, len);
}

/* ---- what is being built ---- */

typedef struct entity {
  int dim, tag;
  int first, count; /* its physical tags in the growing list */
} entity;

typedef struct node_tag {
  long long tag;
  int index;
} node_tag;

typedef struct build {
  cqh_msh* m;
  entity* ents; /* sorted by (dim, tag) once $Entities is read */
  int n_ents;
  int have_entities;
  int* phys; /* entity physical tags, in entity order of the file */
  int n_phys, cap_phys;
  long long* tags; /* node tags, per node */
  int have_names, have_nodes, have_elements;
  long long tag_lo; /* node lookup: dense[tag - tag_lo] when the tags are compact ... */
  int* dense;
  size_t n_dense;
  node_tag* sorted; /* ... else binary search in the tags sorted */
} build;

static int cmp_entity(const void* a, const void* b) {
  const entity *x = a, *y = b;
  if (x->dim != y->dim) return x->dim < y->dim ? -1 : 1;
  return x->tag < y->tag ? -1 : x->tag > y->tag;
}

static int cmp_node_tag(const void* a, const void* b) {
  const node_tag *x = a, *y = b;
  return x->tag < y->tag ? -1 : x->tag > y->tag;
}

static int find_entity(const build* b, int dim, int tag) {
  entity key;
  const entity* e;
  key.dim = dim;
  key.tag = tag;
  e = b->n_ents ? bsearch(&key, b->ents, (size_t)b->n_ents, sizeof *b->ents, cmp_entity) : NULL;
  return e ? (int)(e - b->ents) : -1;
}

/* The node index of a tag, or -1. */
static int find_node(const build* b, long long tag) {
  if (b->dense) {
    if (tag < b->tag_lo || (unsigned long long)(tag - b->tag_lo) >= b->n_dense) return -1;
    return b->dense[tag - b->tag_lo];
  } else {
    node_tag key, *hit;
    key.tag = tag;
    hit = b->m->n_nodes ? bsearch(&key, b->sorted, (size_t)b->m->n_nodes, sizeof *b->sorted, cmp_node_tag) : NULL;
    return hit ? hit->index : -1;
  }
}

/* ---- sections ---- */

/* $MeshFormat: "4.1 file-type data-size", and in binary files the int 1 that tells the byte order. */
static int read_format(reader* r) {
  const unsigned char* t;
  char buf[64], *end, shown_buf[41];
  long long type, size;
  double version;
  size_t len = token(r, &t);
  if (len == 0 || len >= sizeof buf) return unexpected(r, "the format version 4.1", t, len);
  memcpy(buf, t, len);
  buf[len] = 0;
  version = strtod(buf, &end);
  if (end != buf + len) return unexpected(r, "the format version 4.1", t, len);
  if (version != 4.1) {
    r->at = (size_t)(t - r->d);
    return fail(r,
                "MSH version %s is not supported: this reader reads version 4.1 (save with gmsh -format msh41, "
                "or Mesh.MshFileVersion = 4.1)",
                shown(t, len, shown_buf));
  }
  if (integer(r, 0, "the file type (0 ASCII, 1 binary)", 0, 1, &type)) return -1;
  if (integer(r, 0, "the data size (bytes of a size_t)", 1, 64, &size)) return -1;
  if (type == 1 && size != 4 && size != 8) {
    return fail(r, "data size %lld: a binary file's size_t must be 4 or 8 bytes", size);
  }
  r->sz = (int)size;
  if (type == 1) {
    uint32_t one = 0;
    /* the header line ends, then the int 1 follows in the writer's byte order */
    while (r->at < r->size && (r->d[r->at] == ' ' || r->d[r->at] == '\t' || r->d[r->at] == '\r')) r->at++;
    if (r->at >= r->size || r->d[r->at] != '\n') return fail(r, "expected the end of the line after the data size");
    r->at++;
    r->line++;
    r->offsets = 1;
    if (raw(r, &one, 4, "the binary byte-order check (the int 1)")) return -1;
    if (one != 1) {
      if (one != 0x01000000u) {
        r->at -= 4;
        return fail(r, "the byte-order check reads 0x%08x, expected the int 1 in either byte order", (unsigned)one);
      }
      r->swap = 1;
    }
    r->binary = 1;
  }
  return expect(r, "$EndMeshFormat");
}

/* $PhysicalNames (ASCII in binary files too): count, then per group: dimension, tag, "name". */
static int read_names(reader* r, build* b) {
  cqh_msh* m = b->m;
  long long n, i, dim, tag;
  int was_binary = r->binary;
  if (b->have_names) return fail(r, "a second $PhysicalNames section");
  b->have_names = 1;
  r->binary = 0;
  if (integer(r, 0, "the number of physical names", 0, INT_MAX, &n) || room(r, n, 8, "physical names")) goto bad;
  m->name_dim = calloc((size_t)n + 1, sizeof *m->name_dim);
  m->name_tag = calloc((size_t)n + 1, sizeof *m->name_tag);
  m->names = calloc((size_t)n + 1, sizeof *m->names);
  if (!m->name_dim || !m->name_tag || !m->names) {
    fail(r, "out of memory for %lld names", n);
    goto bad;
  }
  for (i = 0; i < n; i++) {
    size_t start;
    if (integer(r, 0, "a physical group's dimension", 0, 3, &dim)) goto bad;
    if (integer(r, 0, "a physical group's tag", INT_MIN, INT_MAX, &tag)) goto bad;
    while (r->at < r->size && (r->d[r->at] == ' ' || r->d[r->at] == '\t')) r->at++;
    if (r->at >= r->size || r->d[r->at] != '"') {
      const unsigned char* t;
      size_t len = token(r, &t);
      unexpected(r, "a name in double quotes", t, len);
      goto bad;
    }
    start = ++r->at;
    while (r->at < r->size && r->d[r->at] != '"' && r->d[r->at] != '\n' && r->at - start <= MAX_NAME) r->at++;
    if (r->at - start > MAX_NAME) {
      fail(r, "a physical name longer than %d bytes", MAX_NAME);
      goto bad;
    }
    if (r->at >= r->size || r->d[r->at] != '"') {
      fail(r, "the name of physical group %lld has no closing quote", tag);
      goto bad;
    }
    m->names[i] = malloc(r->at - start + 1);
    if (!m->names[i]) {
      fail(r, "out of memory");
      goto bad;
    }
    memcpy(m->names[i], r->d + start, r->at - start);
    m->names[i][r->at - start] = 0;
    m->name_dim[i] = (int)dim;
    m->name_tag[i] = (int)tag;
    m->n_names = (int)i + 1;
    r->at++;
  }
  r->binary = was_binary;
  return expect(r, "$EndPhysicalNames");
bad:
  r->binary = was_binary;
  return -1;
}

/* $Entities: points, curves, surfaces and volumes with their physical tags (bounding boxes and boundaries skipped). */
static int read_entities(reader* r, build* b) {
  long long count[4], total = 0, i, k, tag, n, v;
  int dim;
  if (b->have_entities) return fail(r, "a second $Entities section");
  if (b->have_nodes) return fail(r, "$Entities after $Nodes (a MSH 4.1 file lists entities first)");
  b->have_entities = 1;
  for (dim = 0; dim < 4; dim++) {
    static const char* what[4] = {"the number of points", "the number of curves", "the number of surfaces",
                                  "the number of volumes"};
    if (integer(r, 1, what[dim], 0, MAX_ELEMENTS, &count[dim])) return -1;
    total += count[dim];
  }
  /* each entity holds at least a tag, 3 coordinates and a count */
  if (room(r, total, r->binary ? 4 + 24 + (size_t)r->sz : 10, "entities")) return -1;
  b->ents = malloc(((size_t)total + 1) * sizeof *b->ents);
  if (!b->ents) return fail(r, "out of memory for %lld entities", total);
  for (dim = 0; dim < 4; dim++) {
    for (i = 0; i < count[dim]; i++) {
      entity* e = &b->ents[b->n_ents];
      double x;
      if (integer(r, 0, "an entity tag", INT_MIN, INT_MAX, &tag)) return -1;
      for (k = 0; k < (dim == 0 ? 3 : 6); k++) {
        if (real(r, dim == 0 ? "a point's coordinate" : "a bounding box coordinate", &x)) return -1;
      }
      if (integer(r, 1, "the number of physical tags", 0, MAX_ELEMENTS, &n) || room(r, n, nb(r, 4), "physical tags")) {
        return -1;
      }
      if (b->n_phys + n > MAX_ELEMENTS) return fail(r, "too many physical tags");
      if (b->n_phys + n > b->cap_phys) {
        int cap = (int)(2 * (b->n_phys + n) < MAX_ELEMENTS ? 2 * (b->n_phys + n) : MAX_ELEMENTS);
        int* p = realloc(b->phys, (size_t)cap * sizeof *p);
        if (!p) return fail(r, "out of memory for physical tags");
        b->phys = p;
        b->cap_phys = cap;
      }
      e->dim = dim;
      e->tag = (int)tag;
      e->first = b->n_phys;
      e->count = (int)n;
      for (k = 0; k < n; k++) {
        if (integer(r, 0, "a physical tag", INT_MIN, INT_MAX, &v)) return -1;
        b->phys[b->n_phys++] = (int)v;
      }
      b->n_ents++;
      if (dim > 0) { /* the bounding entities, unused */
        if (integer(r, 1, "the number of bounding entities", 0, MAX_ELEMENTS, &n) ||
            room(r, n, nb(r, 4), "bounding entities")) {
          return -1;
        }
        for (k = 0; k < n; k++) {
          if (integer(r, 0, "a bounding entity's tag", INT_MIN, INT_MAX, &v)) return -1;
        }
      }
    }
  }
  qsort(b->ents, (size_t)b->n_ents, sizeof *b->ents, cmp_entity);
  for (i = 1; i < b->n_ents; i++) {
    if (b->ents[i].dim == b->ents[i - 1].dim && b->ents[i].tag == b->ents[i - 1].tag) {
      return fail(r, "entity (dimension %d, tag %d) appears twice", b->ents[i].dim, b->ents[i].tag);
    }
  }
  return expect(r, "$EndEntities");
}

/* The node lookup: a table over [min tag, max tag] when the tags are compact, else the tags sorted. */
static int index_nodes(reader* r, build* b) {
  int n = b->m->n_nodes, i;
  long long lo = LLONG_MAX, hi = 0;
  for (i = 0; i < n; i++) {
    if (b->tags[i] < lo) lo = b->tags[i];
    if (b->tags[i] > hi) hi = b->tags[i];
  }
  if (n > 0 && hi - lo < 4 * (long long)n + 1024) {
    b->tag_lo = lo;
    b->n_dense = (size_t)(hi - lo + 1);
    b->dense = malloc(b->n_dense * sizeof *b->dense);
    if (!b->dense) return fail(r, "out of memory for the node table");
    memset(b->dense, 0xff, b->n_dense * sizeof *b->dense); /* -1 */
    for (i = 0; i < n; i++) {
      int* slot = &b->dense[b->tags[i] - lo];
      if (*slot >= 0) return fail(r, "node tag %lld appears twice", b->tags[i]);
      *slot = i;
    }
    return 0;
  }
  b->sorted = malloc(((size_t)n + 1) * sizeof *b->sorted);
  if (!b->sorted) return fail(r, "out of memory for the node table");
  for (i = 0; i < n; i++) {
    b->sorted[i].tag = b->tags[i];
    b->sorted[i].index = i;
  }
  qsort(b->sorted, (size_t)n, sizeof *b->sorted, cmp_node_tag);
  for (i = 1; i < n; i++) {
    if (b->sorted[i].tag == b->sorted[i - 1].tag) return fail(r, "node tag %lld appears twice", b->sorted[i].tag);
  }
  return 0;
}

/* $Nodes: header (blocks, nodes, min and max tag), then per entity block its dimension, tag, parametric flag and
 * count, the block's node tags, then their coordinates (x y z, and u [v [w]] when parametric). */
static int read_nodes(reader* r, build* b) {
  cqh_msh* m = b->m;
  long long blocks, total, lo, hi, blk, dim, tag, param, count, i, k;
  if (b->have_nodes) return fail(r, "a second $Nodes section");
  b->have_nodes = 1;
  if (integer(r, 1, "the number of node blocks", 0, MAX_ELEMENTS, &blocks) ||
      integer(r, 1, "the number of nodes", 0, MAX_ELEMENTS, &total) ||
      integer(r, 1, "the smallest node tag", 0, LLONG_MAX, &lo) ||
      integer(r, 1, "the largest node tag", 0, LLONG_MAX, &hi)) {
    return -1;
  }
  if (room(r, blocks, r->binary ? 12 + (size_t)r->sz : 8, "node blocks") ||
      room(r, total, r->binary ? 24 + (size_t)r->sz : 8, "nodes")) {
    return -1;
  }
  m->nodes = malloc(((size_t)total + 1) * 3 * sizeof *m->nodes);
  b->tags = malloc(((size_t)total + 1) * sizeof *b->tags);
  if (!m->nodes || !b->tags) return fail(r, "out of memory for %lld nodes", total);
  for (blk = 0; blk < blocks; blk++) {
    int first = m->n_nodes, extra;
    if (integer(r, 0, "a node block's entity dimension", 0, 3, &dim) ||
        integer(r, 0, "a node block's entity tag", INT_MIN, INT_MAX, &tag) ||
        integer(r, 0, "a node block's parametric flag (0 or 1)", 0, 1, &param) ||
        integer(r, 1, "the number of nodes in the block", 0, MAX_ELEMENTS, &count)) {
      return -1;
    }
    if (count > total - m->n_nodes) {
      return fail(r, "node block %lld holds %lld nodes, more than the %lld the header announces in all", blk + 1, count,
                  total);
    }
    for (i = 0; i < count; i++) {
      if (integer(r, 1, "a node tag", 1, LLONG_MAX, &b->tags[first + i])) return -1;
    }
    extra = param ? (int)dim : 0; /* parametric coordinates, unused */
    for (i = 0; i < count; i++) {
      for (k = 0; k < 3 + extra; k++) {
        double x;
        if (real(r, k < 3 ? "a node coordinate" : "a parametric coordinate", &x)) return -1;
        if (k < 3) m->nodes[3 * (first + i) + k] = x;
      }
    }
    m->n_nodes += (int)count;
  }
  if (m->n_nodes != total) {
    return fail(r, "the header announces %lld nodes, the blocks hold %d", total, m->n_nodes);
  }
  if (index_nodes(r, b)) return -1;
  return expect(r, "$EndNodes");
}

/* Nodes per element of Gmsh's fixed-size element types (the MSH format's type numbers); 0: not listed. */
static int type_nodes(long long type) {
  static const int N[32] = {0, 2,  3,  4,  4, 8,  6,  5,  3,  6,  9, 10, 27, 18, 14, 1,
                            8, 20, 15, 13, 9, 10, 12, 15, 15, 21, 4, 5,  6,  20, 35, 56};
  if (type >= 1 && type < 32) return N[type];
  return type == 92 ? 64 : type == 93 ? 125 : 0;
}

/* The dimension of the kept types: lines 1, triangles 2, tetrahedra 3. */
static long long type_dim(long long type) { return type == 4 ? 3 : type; }

/* The tokens left on the current line (ASCII): how an element of a type not listed above shows its node count. */
static long long tokens_on_line(const reader* r) {
  size_t at = r->at;
  long long n = 0;
  while (at < r->size && isspace(r->d[at])) at++; /* the block header's line ends first */
  while (at < r->size && r->d[at] != '\n') {
    while (at < r->size && r->d[at] != '\n' && isspace(r->d[at])) at++; /* blanks, \r, \v, \f */
    if (at >= r->size || r->d[at] == '\n') break;
    n++;
    while (at < r->size && !isspace(r->d[at])) at++;
  }
  return n;
}

/* Makes room for `more` elements of k nodes in e. */
static int grow(reader* r, cqh_msh_elements* e, int k, long long more) {
  int *nodes, *ent;
  if (more == 0) return 0;
  if (e->n + more > MAX_ELEMENTS) return fail(r, "more than %d elements of one kind", MAX_ELEMENTS);
  nodes = realloc(e->nodes, (size_t)(e->n + more) * (size_t)k * sizeof *nodes);
  if (nodes) e->nodes = nodes;
  ent = realloc(e->entity, (size_t)(e->n + more) * sizeof *ent);
  if (ent) e->entity = ent;
  if (!nodes || !ent) return fail(r, "out of memory for %lld elements", e->n + more);
  return 0;
}

/* $Elements: header (blocks, elements, min and max tag), then per entity block its dimension, tag, element type and
 * count, then per element its tag and node tags. Lines, triangles and tetrahedra are kept, others counted. */
static int read_elements(reader* r, build* b) {
  cqh_msh* m = b->m;
  long long blocks, total, lo, hi, blk, dim, tag, type, count, i, k, got = 0, etag, ntag;
  if (b->have_elements) return fail(r, "a second $Elements section");
  if (!b->have_nodes) return fail(r, "$Elements before $Nodes (a MSH 4.1 file lists nodes first)");
  b->have_elements = 1;
  if (integer(r, 1, "the number of element blocks", 0, MAX_ELEMENTS, &blocks) ||
      integer(r, 1, "the number of elements", 0, MAX_ELEMENTS, &total) ||
      integer(r, 1, "the smallest element tag", 0, LLONG_MAX, &lo) ||
      integer(r, 1, "the largest element tag", 0, LLONG_MAX, &hi)) {
    return -1;
  }
  if (room(r, blocks, r->binary ? 12 + (size_t)r->sz : 8, "element blocks") ||
      room(r, total, r->binary ? 2 * (size_t)r->sz : 4, "elements")) {
    return -1;
  }
  for (blk = 0; blk < blocks; blk++) {
    cqh_msh_elements* e = NULL;
    int ent = -1, n;
    if (integer(r, 0, "an element block's entity dimension", 0, 3, &dim) ||
        integer(r, 0, "an element block's entity tag", INT_MIN, INT_MAX, &tag) ||
        integer(r, 0, "an element type", 1, INT_MAX, &type) ||
        integer(r, 1, "the number of elements in the block", 0, MAX_ELEMENTS, &count)) {
      return -1;
    }
    if (b->have_entities && (ent = find_entity(b, (int)dim, (int)tag)) < 0) {
      return fail(r, "element block %lld belongs to entity (dimension %lld, tag %lld), which $Entities does not list",
                  blk + 1, dim, tag);
    }
    if (count > total - got) {
      return fail(r, "element block %lld holds %lld elements, more than the %lld the header announces in all", blk + 1,
                  count, total);
    }
    n = type_nodes(type);
    if (n == 0 && count > 0) {
      long long on_line = r->binary ? 0 : tokens_on_line(r);
      if (on_line < 2 || on_line > 1001) {
        return fail(r,
                    "element type %lld is not a fixed-size Gmsh type this reader knows, and its node count cannot "
                    "be told%s",
                    type, r->binary ? " in a binary file" : " from its first line");
      }
      n = (int)on_line - 1;
    }
    if (room(r, count, (size_t)(n + 1) * nb(r, (size_t)r->sz), "elements")) return -1;
    e = type == 1 ? &m->lines : type == 2 ? &m->triangles : type == 4 ? &m->tets : NULL;
    if (e && dim < type_dim(type)) {
      return fail(r, "element block %lld holds %s but belongs to an entity of dimension %lld", blk + 1,
                  type == 1   ? "lines"
                  : type == 2 ? "triangles"
                              : "tetrahedra",
                  dim);
    }
    if (e && grow(r, e, n, count)) return -1;
    for (i = 0; i < count; i++) {
      if (integer(r, 1, "an element tag", 1, LLONG_MAX, &etag)) return -1;
      for (k = 0; k < n; k++) {
        int node;
        if (integer(r, 1, "a node tag", 1, LLONG_MAX, &ntag)) return -1;
        if ((node = find_node(b, ntag)) < 0) {
          return fail(r, "element %lld refers to node %lld, which $Nodes does not list", etag, ntag);
        }
        if (e) {
          int j;
          for (j = 0; j < k; j++) {
            if (e->nodes[(size_t)e->n * n + j] == node) return fail(r, "element %lld repeats node %lld", etag, ntag);
          }
          e->nodes[(size_t)e->n * n + k] = node;
        }
      }
      if (e)
        e->entity[e->n++] = ent;
      else
        m->n_skipped++;
    }
    got += count;
  }
  if (got != total) return fail(r, "the header announces %lld elements, the blocks hold %lld", total, got);
  return expect(r, "$EndElements");
}

/* Skips a section this reader does not use, up to its $End line. */
static int skip_section(reader* r, const char* name) {
  char end[80];
  size_t len;
  snprintf(end, sizeof end, "$End%s", name);
  len = strlen(end);
  while (r->at < r->size) {
    if (r->d[r->at] == '\n') r->line++;
    if ((r->at == 0 || r->d[r->at - 1] == '\n') && r->size - r->at >= len && memcmp(r->d + r->at, end, len) == 0 &&
        (r->at + len == r->size || isspace(r->d[r->at + len]))) {
      r->at += len;
      return 0;
    }
    r->at++;
  }
  return fail(r, "the section has no %s line (truncated file?)", end);
}

/* ---- the file ---- */

static void free_build(build* b) {
  free(b->ents);
  free(b->phys);
  free(b->tags);
  free(b->dense);
  free(b->sorted);
}

/* The entities in sorted order with their physical tags, into m. */
static int finish_entities(reader* r, build* b) {
  cqh_msh* m = b->m;
  int e, k, at = 0;
  m->n_entities = b->n_ents;
  m->entity_dim = malloc(((size_t)b->n_ents + 1) * sizeof(int));
  m->entity_tag = malloc(((size_t)b->n_ents + 1) * sizeof(int));
  m->entity_first = malloc(((size_t)b->n_ents + 1) * sizeof(int));
  m->entity_physicals = malloc(((size_t)b->n_phys + 1) * sizeof(int));
  if (!m->entity_dim || !m->entity_tag || !m->entity_first || !m->entity_physicals) return fail(r, "out of memory");
  for (e = 0; e < b->n_ents; e++) {
    m->entity_dim[e] = b->ents[e].dim;
    m->entity_tag[e] = b->ents[e].tag;
    m->entity_first[e] = at;
    for (k = 0; k < b->ents[e].count; k++) m->entity_physicals[at++] = b->phys[b->ents[e].first + k];
  }
  m->entity_first[b->n_ents] = at;
  return 0;
}

cqh_msh* cqh_msh_parse(const unsigned char* data, size_t size, char* err, int err_size) {
  reader r;
  build b;
  cqh_msh* m;
  int status = 0;
  if (data == NULL || size == 0) return cqh_fail(err, err_size, "the file is empty (0 bytes)");
  memset(&r, 0, sizeof r);
  memset(&b, 0, sizeof b);
  r.d = data;
  r.size = size;
  r.line = 1;
  r.section = "file";
  r.err = err;
  r.err_size = err_size;
  m = calloc(1, sizeof *m);
  if (m == NULL) return cqh_fail(err, err_size, "out of memory");
  b.m = m;
  {
    const unsigned char* t;
    size_t len = token(&r, &t);
    if (len != 11 || memcmp(t, "$MeshFormat", 11) != 0) {
      r.at = 0;
      r.line = 1;
      status = unexpected(&r, "'$MeshFormat' (the start of a Gmsh MSH file)", t, len);
    }
  }
  r.section = "$MeshFormat";
  if (status == 0) status = read_format(&r);
  m->binary = r.binary;
  while (status == 0) {
    const unsigned char* t;
    char name[64];
    size_t len = token(&r, &t);
    if (len == 0) break;
    r.section = "file";
    if (t[0] != '$' || len < 2 || len >= sizeof name) {
      status = unexpected(&r, "a section such as $Nodes", t, len);
      break;
    }
    memcpy(name, t, len);
    name[len] = 0;
    r.section = name;
    /* binary data starts right after the header line */
    if (r.at < r.size && r.d[r.at] == '\r') r.at++;
    if (r.at < r.size && r.d[r.at] == '\n') r.at++, r.line++;
    if (!strcmp(name, "$MeshFormat"))
      status = fail(&r, "a second $MeshFormat section");
    else if (!strcmp(name, "$PhysicalNames"))
      status = read_names(&r, &b);
    else if (!strcmp(name, "$Entities"))
      status = read_entities(&r, &b);
    else if (!strcmp(name, "$Nodes"))
      status = read_nodes(&r, &b);
    else if (!strcmp(name, "$Elements"))
      status = read_elements(&r, &b);
    else if (!strncmp(name, "$End", 4))
      status = fail(&r, "%s without its section", name);
    else
      status = skip_section(&r, name + 1);
  }
  r.section = "file";
  if (status == 0 && !b.have_nodes) status = fail(&r, "no $Nodes section");
  if (status == 0 && !b.have_elements) status = fail(&r, "no $Elements section");
  if (status == 0) status = finish_entities(&r, &b);
  free_build(&b);
  if (status != 0) {
    cqh_msh_free(m);
    return NULL;
  }
  return m;
}

cqh_msh* cqh_msh_read(const char* path, double max_bytes, char* err, int err_size) {
  size_t size = 0;
  cqh_msh* m;
  unsigned char* data;
  if (!(max_bytes >= 1)) return cqh_fail(err, err_size, "max_bytes must be >= 1");
  data = cqh_read_file(path, max_bytes < (double)SIZE_MAX / 2 ? (size_t)max_bytes : SIZE_MAX / 2, &size, err, err_size);
  if (data == NULL) return NULL;
  m = cqh_msh_parse(data, size, err, err_size);
  free(data);
  return m;
}

static void free_elements(cqh_msh_elements* e) {
  free(e->nodes);
  free(e->entity);
}

void cqh_msh_free(cqh_msh* m) {
  int i;
  if (m == NULL) return;
  free(m->nodes);
  free_elements(&m->lines);
  free_elements(&m->triangles);
  free_elements(&m->tets);
  free(m->entity_dim);
  free(m->entity_tag);
  free(m->entity_first);
  free(m->entity_physicals);
  if (m->names) {
    for (i = 0; i < m->n_names; i++) free(m->names[i]);
  }
  free(m->names);
  free(m->name_dim);
  free(m->name_tag);
  free(m);
}
