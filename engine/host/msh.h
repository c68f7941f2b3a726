/* msh.h: Gmsh MSH 4.1 meshes (ASCII and binary) for robot:gmsh (engine/host/msh.c), linked into the cqlua host and reached
 * from Lua through ffi.C. Preprocessed into the FFI declarations like cq.h: no includes, no function bodies. */
#ifndef CQH_MSH_H
#define CQH_MSH_H

/* The elements of one kind: lines (type 1, 2 nodes), triangles (type 2, 3 nodes) or tetrahedra (type 4, 4 nodes). */
typedef struct cqh_msh_elements {
  int n;       /* elements */
  int* nodes;  /* k per element: node indices (0-based, into cqh_msh.nodes), in the file's order */
  int* entity; /* per element: its entity's index into cqh_msh.entity_* (0-based); -1: the file has no $Entities */
} cqh_msh_elements;

/* A mesh as the file gives it: nodes, the elements of the three kinds kept (others are counted in n_skipped), the
 * geometric entities with the physical groups they belong to, and the physical groups' names. */
typedef struct cqh_msh {
  int binary;                 /* 1 for a binary file */
  int n_nodes;                /* nodes */
  double* nodes;              /* 3 per node: x, y, z (file units) */
  cqh_msh_elements lines;     /* type 1 */
  cqh_msh_elements triangles; /* type 2 */
  cqh_msh_elements tets;      /* type 4 */
  int n_skipped;              /* elements of other types (points, quadrangles, second-order elements, ...) */
  int n_entities;             /* geometric entities ($Entities), sorted by dimension then tag */
  int* entity_dim;            /* per entity: 0 point, 1 curve, 2 surface, 3 volume */
  int* entity_tag;            /* per entity: its tag */
  int* entity_first;     /* n_entities + 1: entity e's physical tags are entity_physicals[first[e]..first[e+1]-1] */
  int* entity_physicals; /* physical group tags (of the entity's dimension) */
  int n_names;           /* $PhysicalNames */
  int* name_dim;         /* per name: the physical group's dimension */
  int* name_tag;         /* per name: its tag */
  char** names;          /* per name: the name (without quotes) */
} cqh_msh;

/* Reads a MSH 4.1 file of at most max_bytes bytes. Returns NULL with the problem in err (err_size bytes): the section,
 * the line (ASCII) or byte offset (binary), what was expected and what was found. Free with cqh_msh_free. */
cqh_msh* cqh_msh_read(const char* path, double max_bytes, char* err, int err_size);
/* The same from size bytes in memory (what the fuzzer drives: tests/fuzz/fuzz_msh.c). */
cqh_msh* cqh_msh_parse(const unsigned char* data, size_t size, char* err, int err_size);
void cqh_msh_free(cqh_msh* m);

/* The points of a world-aligned lattice inside a mesh's elements (robot:gmsh{spacing = ...}). */
typedef struct cqh_msh_lattice {
  int n;        /* points inside an element */
  double* x;    /* 3 per point: position, (m + 1/2) spacing per axis for whole m (2D: z the first node's), lattice order */
  int* element; /* per point: the element holding it (0-based) */
  int count[3]; /* lattice points per axis over the mesh's bounding box (2D: 1 along z) */
  double origin[3]; /* the box's corner: point (i, j, k) of it is at origin + (i + 1/2, j + 1/2, k + 1/2) spacing */
} cqh_msh_lattice;

/* The lattice points inside the elements: n_elements elements of k nodes (4: tetrahedra; 3: triangles, in x and y)
 * with node indices into X (3 coordinates per node, placed). A point on a face two elements share goes to one of
 * them; one on the mesh's surface to one side of it, alike for all. At most max_points lattice points over the
 * elements' bounding box. Returns NULL with the problem in err. Free with cqh_msh_lattice_free. */
cqh_msh_lattice* cqh_msh_lattice_fill(const double* X, int n_nodes, const int* nodes, int n_elements, int k,
                                      double spacing, double max_points, char* err, int err_size);
void cqh_msh_lattice_free(cqh_msh_lattice* f);
#endif
