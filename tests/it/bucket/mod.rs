//! A library in a bucket (moto, fake-gcs-server or Azurite behind the
//! counting proxy, `tests/s3/`): listings, bodies, big chapters, walkers,
//! a fleet, outages, the published index, the request counters, each
//! cloud's mistakes.

mod books_index;
mod bucket_big;
mod bucket_first_page;
mod bucket_listings;
mod bucket_random;
mod bucket_walk;
mod clouds;
mod errnos;
mod fetched_once;
mod fleet;
pub(crate) mod native;
mod object_storage;
mod one_view;
mod outage;
mod outage_log;
mod published_roots;
mod publisher_log;
mod status_agrees;
mod status_counters;
