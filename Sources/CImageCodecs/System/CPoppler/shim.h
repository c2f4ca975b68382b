#pragma once
#include <cairo.h>
#include <poppler.h>
