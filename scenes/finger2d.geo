// finger2d.geo: the longitudinal section of scenes/finger.geo (through a side wall's inner face, so the chambers are
// separate and the channel is out of the plane), for 2D robots: robot:gmsh{path = "scenes/finger2d.geo"}, in
// MILLIMETRES like finger.geo (scale = 0.001 gives metres). x along the finger from its clamped base, y up.
//   gmsh -2 -format msh41 -setnumber mesh_size 1 scenes/finger2d.geo -o finger2d.msh
// Physical groups: Surface "body" (above the layer), Surface "layer" (the strain-limiting layer), Curve "chamber"
// (every chamber's walls; the chambers are separate cavities, one group), Curve "base" (the clamped end, x = 0).
SetFactory("OpenCASCADE");
DefineConstant[ mesh_size = {1, Min 0.1, Max 20, Name "Parameters/mesh size (mm)"} ];

L = 100;      // length (x)
H = 16;       // height (y), layer included
layer = 3;    // strain-limiting bottom layer (y from 0 to layer)
n = 8;        // chambers
cl = 8;       // chamber length along x
gap = 3;      // wall between two chambers
x0 = 10;      // solid base before the first chamber (clamped)
bottom = 2;   // wall between the layer and the chambers
roof = 2;     // wall above the chambers
span = n * cl + (n - 1) * gap;

Rectangle(1) = {0, layer, 0, L, H - layer};
Rectangle(2) = {0, 0, 0, L, layer};
cav[] = {};
For i In {0 : n - 1}
  t = news; Rectangle(t) = {x0 + i * (cl + gap), layer + bottom, 0, cl, H - roof - layer - bottom};
  cav[] += t;
EndFor
body[] = BooleanDifference{ Surface{1}; Delete; }{ Surface{cav[]}; Delete; };
BooleanFragments{ Surface{body[], 2}; Delete; }{}

e = 1e-3;
Physical Surface("body") = Surface In BoundingBox{-e, layer - e, -e, L + e, H + e, e};
Physical Surface("layer") = Surface In BoundingBox{-e, -e, -e, L + e, layer + e, e};
Physical Curve("chamber") = Curve In BoundingBox{x0 - e, layer + bottom - e, -e, x0 + span + e, H - roof + e, e};
Physical Curve("base") = Curve In BoundingBox{-e, -e, -e, e, H + e, e};
Mesh.MeshSizeMax = mesh_size;
