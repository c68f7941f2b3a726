// mesh_obj.cpp: OBJ text to a triangle soup through tinyobjloader (C++), for engine/host/mesh.c; every index is checked
// here, polygons are fanned into triangles, materials and texture files are never opened.

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <new>
#include <sstream>
#include <string>
#include <vector>

// Coordinates as float, like STL's: tinyobjloader's text-to-double is not correctly rounded (12.375 comes out as
// 12.375000000000002), its float is, so an OBJ and an STL of the same mesh give the same particles.
#define TINYOBJLOADER_IMPLEMENTATION
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <tiny_obj_loader.h>
#pragma GCC diagnostic pop

#include "mesh_load.h"
#include "readfile.h"

// Lines that start a face ("f "): a lower bound on the triangles, checked before tinyobjloader builds its tables.
static size_t count_faces(const char* text, size_t size) {
  size_t n = 0;
  bool line_start = true;
  for (size_t i = 0; i < size; i++) {
    char c = text[i];
    if (line_start && c == 'f' && i + 1 < size && (text[i + 1] == ' ' || text[i + 1] == '\t')) n++;
    if (c == '\n' || c == '\r')
      line_start = true;
    else if (c != ' ' && c != '\t')
      line_start = false;
  }
  return n;
}

// The f lines with fewer than 3 vertices (tinyobjloader drops them without a word): their count, and the first one's
// line number in *first_line_no.
static size_t short_faces(const char* text, size_t size, size_t* first_line_no) {
  size_t count = 0, line_no = 1;
  *first_line_no = 0;
  for (size_t i = 0; i < size;) {
    size_t end = i;
    while (end < size && text[end] != '\n' && text[end] != '\r') end++;
    size_t j = i;
    while (j < end && (text[j] == ' ' || text[j] == '\t')) j++;
    if (j < end && text[j] == 'f' && (j + 1 == end || text[j + 1] == ' ' || text[j + 1] == '\t')) {
      size_t tokens = 0;
      for (size_t k = j + 1; k < end;) {
        while (k < end && (text[k] == ' ' || text[k] == '\t')) k++;
        if (k < end && text[k] == '#') break;
        if (k < end) tokens++;
        while (k < end && text[k] != ' ' && text[k] != '\t') k++;
      }
      if (tokens < 3) {
        if (count++ == 0) *first_line_no = line_no;
      }
    }
    i = end;
    if (i < size && text[i] == '\r' && i + 1 < size && text[i + 1] == '\n') i++;
    if (i < size) i++, line_no++;
  }
  return count;
}

// [+-] digits [. digits] [e [+-] digits], with a digit somewhere before the exponent.
static bool is_number(const char* t, size_t len) {
  size_t i = 0, digits = 0;
  if (i < len && (t[i] == '+' || t[i] == '-')) i++;
  while (i < len && isdigit((unsigned char)t[i])) i++, digits++;
  if (i < len && t[i] == '.') {
    i++;
    while (i < len && isdigit((unsigned char)t[i])) i++, digits++;
  }
  if (digits == 0) return false;
  if (i < len && (t[i] == 'e' || t[i] == 'E')) {
    size_t exp = 0;
    i++;
    if (i < len && (t[i] == '+' || t[i] == '-')) i++;
    while (i < len && isdigit((unsigned char)t[i])) i++, exp++;
    if (exp == 0) return false;
  }
  return i == len;
}

// tinyobjloader reads a coordinate it cannot parse ("nan", "1,5", a missing one) as 0 without a word: every "v" line
// must hold at least 3 numbers (then optional w or r g b, and a # comment). Returns 0, or -1 with the line in err.
static int check_vertex_lines(const char* text, size_t size, char* err, int err_size) {
  size_t i = 0;
  int line = 1;
  while (i < size) {
    size_t end = i;
    while (end < size && text[end] != '\n' && text[end] != '\r') end++;
    size_t at = i;
    while (at < end && (text[at] == ' ' || text[at] == '\t')) at++;
    if (end - at >= 2 && text[at] == 'v' && (text[at + 1] == ' ' || text[at + 1] == '\t')) {
      int count = 0;
      for (at += 2;; count++) {
        while (at < end && (text[at] == ' ' || text[at] == '\t')) at++;
        size_t start = at;
        while (at < end && text[at] != ' ' && text[at] != '\t') at++;
        if (at == start || text[start] == '#') break; /* the end, or a comment */
        if (!is_number(text + start, at - start)) {
          std::string shown(text + start, at - start < 40 ? at - start : 40);
          for (char& c : shown) c = isprint((unsigned char)c) ? c : '?';
          cqh_fail(err, err_size, "OBJ line %d: vertex coordinate '%s' is not a number", line, shown.c_str());
          return -1;
        }
      }
      if (count < 3) {
        cqh_fail(err, err_size, "OBJ line %d: a vertex needs 3 coordinates (it has %d)", line, count);
        return -1;
      }
    }
    if (end < size && text[end] == '\n') line++;
    i = end + 1;
  }
  return 0;
}

// The text with only the statements a shape needs (v, vt, vn, f, o, g, s): every other line (skin weights, lines,
// points, subdivision tags, materials, curves, comments) is blanked, so tinyobjloader never parses them (the fuzzer
// found its skin-weight parser casting a huge float to int). Line numbers stay the same.
static std::string shape_statements(const char* text, size_t size) {
  static const char* const keep[] = {"v", "vt", "vn", "f", "o", "g", "s"};
  std::string out(text, size);
  size_t i = 0;
  while (i < size) {
    size_t end = i;
    while (end < size && text[end] != '\n' && text[end] != '\r') end++;
    size_t at = i;
    while (at < end && (text[at] == ' ' || text[at] == '\t')) at++;
    size_t word = at;
    while (word < end && text[word] != ' ' && text[word] != '\t') word++;
    bool kept = false;
    for (const char* k : keep) kept = kept || (word - at == strlen(k) && strncmp(text + at, k, word - at) == 0);
    if (!kept) std::fill(out.begin() + (long)i, out.begin() + (long)end, ' ');
    i = end + 1;
  }
  return out;
}

static int fail(char* err, int err_size, const std::string& what) {
  cqh_fail(err, err_size, "%s", what.c_str());
  return -1;
}

// The first line of tinyobjloader's message, without its trailing newline.
static std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.empty() ? std::string("no detail") : line;
}

static int parse(const char* text, size_t size, int max_triangles, cqi_soup* out, char* err, int err_size) {
  size_t faces = count_faces(text, size);
  if (faces > (size_t)max_triangles) {
    cqh_fail(err, err_size, "the OBJ file has %zu faces, more than the limit of %d triangles", faces, max_triangles);
    return -1;
  }
  if (check_vertex_lines(text, size, err, err_size) != 0) return -1;
  size_t short_line = 0, n_short = short_faces(text, size, &short_line);
  if (n_short > 0) {
    cqh_fail(err, err_size,
             "the OBJ file has %zu face line%s with fewer than 3 vertices (the first at line %zu): a face needs 3 or "
             "more (a line or a point is not a surface)",
             n_short, n_short == 1 ? "" : "s", short_line);
    return -1;
  }
  tinyobj::attrib_t attrib;
  std::vector<tinyobj::shape_t> shapes;
  std::vector<tinyobj::material_t> materials;
  std::string warn, message;
  std::istringstream in(shape_statements(text, size));
  // no material reader: mtllib lines are ignored; no triangulation: we fan polygons after checking their indices
  if (!tinyobj::LoadObj(&attrib, &shapes, &materials, &warn, &message, &in, NULL, false)) {
    return fail(err, err_size, "cannot parse the OBJ file (tinyobjloader: " + first_line(message) + ")");
  }
  size_t nv = attrib.vertices.size() / 3;
  for (size_t i = 0; i < 3 * nv; i++) {
    if (!std::isfinite(attrib.vertices[i])) {
      cqh_fail(err, err_size, "OBJ vertex %zu has a non-finite coordinate (%g)", i / 3 + 1, (double)attrib.vertices[i]);
      return -1;
    }
  }
  size_t n = 0;
  for (const tinyobj::shape_t& s : shapes) {
    size_t corners = 0;
    for (unsigned char k : s.mesh.num_face_vertices) {
      n += k >= 3 ? k - 2 : 0;
      corners += k;
    }
    // tinyobjloader keeps a face's vertex count in a byte: a longer face would shift every later face
    if (corners != s.mesh.indices.size()) {
      return fail(err, err_size, "the OBJ file has a face with 256 or more vertices (at most 255 are supported)");
    }
  }
  if (n == 0) return fail(err, err_size, "the OBJ file has no faces (f lines with 3 or more vertices)");
  if (n > (size_t)max_triangles) {
    cqh_fail(err, err_size, "the OBJ file has %zu triangles, more than the limit of %d", n, max_triangles);
    return -1;
  }
  out->xyz = (double*)malloc(9 * n * sizeof(double));
  if (out->xyz == NULL) return fail(err, err_size, "out of memory for the triangles");
  size_t t = 0;
  for (const tinyobj::shape_t& s : shapes) {
    size_t first = 0;
    for (size_t f = 0; f < s.mesh.num_face_vertices.size(); f++) {
      size_t k = s.mesh.num_face_vertices[f];
      for (size_t c = 0; c < k; c++) {
        int v = s.mesh.indices[first + c].vertex_index;
        if (v < 0 || (size_t)v >= nv) {
          free(out->xyz);
          out->xyz = NULL;
          std::string where = s.name.empty() ? "" : " (object '" + s.name.substr(0, 40) + "')";
          cqh_fail(err, err_size, "OBJ face %zu%s refers to vertex %d, but the file has %zu vertices", f + 1,
                   where.c_str(), v + 1, nv);
          return -1;
        }
      }
      for (size_t c = 1; c + 1 < k; c++) { // fan: (0, c, c + 1)
        const size_t corner[3] = {first, first + c, first + c + 1};
        for (int j = 0; j < 3; j++) {
          const tinyobj::real_t* p = &attrib.vertices[3 * (size_t)s.mesh.indices[corner[j]].vertex_index];
          for (int a = 0; a < 3; a++) out->xyz[9 * t + 3 * j + a] = p[a];
        }
        t++;
      }
      first += k;
    }
  }
  out->n = (int)t;
  return 0;
}

extern "C" int cqi_obj_soup(const char* text, size_t size, int max_triangles, cqi_soup* out, char* err, int err_size) {
  out->n = 0;
  out->xyz = NULL;
  try {
    return parse(text, size, max_triangles, out, err, err_size);
  } catch (const std::bad_alloc&) {
    return fail(err, err_size, "out of memory parsing the OBJ file");
  } catch (const std::exception& e) {
    return fail(err, err_size, std::string("cannot parse the OBJ file (") + e.what() + ")");
  }
}
