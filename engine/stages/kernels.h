/* All per-particle and per-node kernel bodies, instantiated for D = 2 (name_2) and D = 3 (name_3). */
#ifndef CQ_KERNELS_H
#define CQ_KERNELS_H
#include "cq_real.h"
#include "kernel_types.h"
#include "lame.h"

#define D 2
#define CQ_NN 9
#include "smallmat.h"
#include "bspline.h"
#include "material.h"
#include "volumetric.h"
#include "fill.h"
#include "grid.h"
#include "wall.h"
#include "chamber.h"
#include "p2g.h"
#include "g2p.h"
#include "implicit.h"
#include "cable.h"
#include "moments.h"
#undef CQ_NN
#undef D

#define D 3
#define CQ_NN 27
#include "smallmat.h"
#include "bspline.h"
#include "material.h"
#include "volumetric.h"
#include "fill.h"
#include "grid.h"
#include "wall.h"
#include "chamber.h"
#include "p2g.h"
#include "g2p.h"
#include "implicit.h"
#include "cable.h"
#include "moments.h"
#undef CQ_NN
#undef D
#endif
