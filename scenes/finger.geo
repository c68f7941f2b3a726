// finger.geo: a PneuNet-style pneumatic bending finger for robot:gmsh (seed 003 sec. 4.1), in MILLIMETRES
// (robot:gmsh{scale = 0.001} gives metres). x runs along the finger from its clamped base (x = 0) to the tip,
// y is up, z across. A row of box chambers sits in the body above a thicker strain-limiting layer, so inflation
// stretches the top and the finger curls down towards the layer.
//   gmsh -3 -format msh41 -setnumber mesh_size 3 scenes/finger.geo -o finger.msh
// Physical groups: Volume "body" (the silicone above the layer), Volume "layer" (the strain-limiting layer),
// Surface "chamber" (every chamber wall, and the channel's if any), Surface "base" (the clamped end face x = 0).
SetFactory("OpenCASCADE");
DefineConstant[ mesh_size = {2, Min 0.2, Max 20, Name "Parameters/mesh size (mm)"} ];

L = 100;      // length (x)
W = 20;       // width (z)
H = 16;       // height (y), layer included
layer = 3;    // strain-limiting bottom layer (y from 0 to layer)
n = 8;        // chambers
cl = 8;       // chamber length along x
gap = 3;      // wall between two chambers
x0 = 10;      // solid base before the first chamber (clamped)
bottom = 2;   // wall between the layer and the chambers
roof = 3;     // wall above the chambers (3 and 4 mm walls: thinner ones balloon at 20 kPa with the seed's soft fit)
side = 4;     // side walls (z)
// A square channel along the chambers' floor, joining them into one cavity as in a moulded PneuNet (mm; 0: none).
// None by default: robot:chamber drives every chamber wall with the one pressure, so the channel carries no load the
// model needs, and a 2 mm channel is under 3 cells across at any dx above 0.67 mm, where its walls share grid nodes
// and the body comes apart there (docs/modelling.md, resolution rules). Set it (-setnumber channel 2) at such a dx.
DefineConstant[ channel = {0, Min 0, Max 8, Name "Parameters/channel (mm)"} ];
span = n * cl + (n - 1) * gap; // the chambers run from x0 to x0 + span (the tip wall is L - x0 - span = 5)

Box(1) = {0, layer, 0, L, H - layer, W};
Box(2) = {0, 0, 0, L, layer, W};
cav[] = {};
For i In {0 : n - 1}
  t = newv; Box(t) = {x0 + i * (cl + gap), layer + bottom, side, cl, H - roof - layer - bottom, W - 2 * side};
  cav[] += t;
EndFor
If (channel > 0)
  t = newv; Box(t) = {x0, layer + bottom, (W - channel) / 2, span, channel, channel};
  cav[] += t;
EndIf
body[] = BooleanDifference{ Volume{1}; Delete; }{ Volume{cav[]}; Delete; };
BooleanFragments{ Volume{body[], 2}; Delete; }{} // the body and the layer share their interface's nodes

e = 1e-3;
Physical Volume("body") = Volume In BoundingBox{-e, layer - e, -e, L + e, H + e, W + e};
Physical Volume("layer") = Volume In BoundingBox{-e, -e, -e, L + e, layer + e, W + e};
Physical Surface("chamber") = Surface In BoundingBox{x0 - e, layer + bottom - e, side - e,
                                                      x0 + span + e, H - roof + e, W - side + e};
Physical Surface("base") = Surface In BoundingBox{-e, -e, -e, e, H + e, W + e};
Mesh.MeshSizeMax = mesh_size;
