/* The names and docs of the registries (registry.h), for cq_name. The bottom layer: it uses nothing else. */
#include <stddef.h>
#include "cq.h"

typedef struct {
  const char* name;
  const char* doc;
} cqi_entry;

#define CQI_ENTRY(ID, name, doc, ...) {#name, doc},
static const cqi_entry boundaries[] = {CQ_BOUNDARIES(CQI_ENTRY)};
static const cqi_entry actuator_kinds[] = {CQ_ACTUATOR_KINDS(CQI_ENTRY)};
static const cqi_entry materials[] = {CQ_MATERIALS(CQI_ENTRY)};
static const cqi_entry integrators[] = {CQ_INTEGRATORS(CQI_ENTRY)};
static const cqi_entry backends[] = {CQ_BACKENDS(CQI_ENTRY)};
static const cqi_entry checks[] = {CQ_CHECKS(CQI_ENTRY)};
#undef CQI_ENTRY

/* Each material's registry columns and the parameters its header lists for the robot builder (CQ_MAT_PARAMS_<name>'s
 * U rows) as " c10! c01! bulk!" (! required, ? optional). */
#define CQI_USE_TEXT(name, required) " " #name CQI_CAT(CQI_REQ_, required)
#define CQI_REQ_1 "!"
#define CQI_REQ_0 "?"
#define CQI_NO_P(...)
#define CQI_MAT_INFO(ID, name, doc, enu, lanes2, lanes3, ...) {enu, "" CQ_MAT_PARAMS_##name(CQI_NO_P, CQI_USE_TEXT)},
static const struct {
  int enu;
  const char* uses;
} material_info[] = {CQ_MATERIALS(CQI_MAT_INFO)};
#undef CQI_MAT_INFO

int cq_material_info(int id, int* enu, const char** uses) {
  if (id < 0 || id >= CQ_N_MATERIALS) return CQ_ERR_ARG;
  if (enu) *enu = material_info[id].enu;
  if (uses) *uses = material_info[id].uses;
  return CQ_OK;
}

const char* cq_name(int list, int id, const char** doc) {
  static const struct {
    const cqi_entry* entries;
    int count;
  } lists[] = {{boundaries, CQ_N_BOUNDARIES}, {actuator_kinds, CQ_N_ACTUATOR_KINDS},
               {materials, CQ_N_MATERIALS},   {integrators, CQ_N_INTEGRATORS},
               {backends, CQ_N_BACKENDS},     {checks, CQ_N_CHECKS}};
  if (list < 0 || list >= (int)(sizeof lists / sizeof lists[0]) || id < 0 || id >= lists[list].count) return NULL;
  if (doc) *doc = lists[list].entries[id].doc;
  return lists[list].entries[id].name;
}
