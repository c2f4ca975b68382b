#pragma once
#include <libheif/heif.h>
