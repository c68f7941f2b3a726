/* mesh.h: triangle meshes from OBJ (tinyobjloader) and STL (assimp) files, checked to be closed and filled with
 * particles on a lattice (engine/host/mesh.c, mesh_stl.c, mesh_obj.cpp, mesh_lattice.c); linked into the cqlua host and reached
 * from Lua through ffi.C. Preprocessed into the FFI declarations like cq.h: no includes, no function bodies. */
#ifndef CQH_MESH_H
#define CQH_MESH_H

enum { CQH_MESH_OBJ = 1, CQH_MESH_STL = 2 };

/* A closed, consistently oriented triangle mesh: vertices welded by exact position, triangles counter-clockwise seen
 * from outside (a file whose triangles all face inwards is reversed). */
typedef struct cqh_mesh {
  int n_vertices;   /* welded vertices */
  int n_triangles;  /* triangles (polygons of an OBJ are fanned into triangles) */
  double* vertices; /* 3 per vertex: x, y, z (file units) */
  int* triangles;   /* 3 per triangle: vertex indices (0-based), counter-clockwise seen from outside */
  double lo[3];     /* bounding box, file units */
  double hi[3];
  double area;   /* surface area (file units^2) */
  double volume; /* enclosed volume (file units^3, > 0) */
  int flipped;   /* 1 when the file's triangles faced inwards and were reversed */
} cqh_mesh;

/* Reads an OBJ (format CQH_MESH_OBJ) or STL (CQH_MESH_STL, binary or ASCII) file of at most max_triangles triangles and
 * checks it: finite vertices, no degenerate triangle, every edge shared by exactly two triangles running through it in
 * opposite directions, a volume. Returns NULL with the problem in err (err_size bytes). Free with cqh_mesh_free. */
cqh_mesh* cqh_mesh_read(const char* path, int format, int max_triangles, char* err, int err_size);
/* The same from size bytes in memory (what the fuzzers drive: tests/fuzz/). */
cqh_mesh* cqh_mesh_parse(const unsigned char* data, size_t size, int format, int max_triangles, char* err,
                         int err_size);
/* The same from a triangle soup: 9 coordinates per triangle (corners in order). */
cqh_mesh* cqh_mesh_from_triangles(const double* xyz, int n_triangles, int max_triangles, char* err, int err_size);
void cqh_mesh_free(cqh_mesh* m);

/* The particles inside a mesh and the surface they carry. */
typedef struct cqh_lattice {
  int n;              /* particles (lattice points inside the mesh) */
  double* x;          /* 3 per particle: position, lattice order (first axis slowest) */
  int n_surface;      /* particles that carry a share of the surface */
  int* surface;       /* their indices into x (0-based, ascending) */
  double* area;       /* per surface particle: the area of the mesh pieces nearest to it (sums to mesh_area) */
  double* normal;     /* 3 per surface particle: area-weighted mean outward normal, so area * normal is the vector
                           area of its pieces (unit length on smooth parts, shorter where faces of different
                           directions meet at one particle, e.g. at a cube's edge) */
  int count[3];       /* lattice points per axis */
  double mesh_area;   /* area of the placed mesh */
  double mesh_volume; /* volume of the placed mesh */
} cqh_lattice;

/* Places the mesh (x -> offset + L x - min over the vertices of L x, L = linear: 9 numbers, row-major, det > 0) and
 * fills it: lattice points offset + (i + 1/2) spacing over its bounding box (ceil(extent / spacing) per axis, at most
 * max_points in all), kept when inside (nonzero winding number along lattice lines, majority of the three axes);
 * each piece of the surface (triangles split until no edge exceeds spacing / 2) goes to the nearest particle. Returns
 * NULL with the problem in err. Free with cqh_lattice_free. */
cqh_lattice* cqh_mesh_lattice(const cqh_mesh* m, const double* linear, const double* offset, double spacing,
                              double max_points, char* err, int err_size);
void cqh_lattice_free(cqh_lattice* f);
#endif
