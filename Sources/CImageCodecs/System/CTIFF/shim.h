#pragma once
#include <tiffio.h>
