-- Extraction jobs carry a lease: the server running a job holds it until
-- claimed_until; a job whose lease ran out (its server died) is claimed by another.
ALTER TABLE extraction_queue ADD COLUMN claimed_by TEXT;
ALTER TABLE extraction_queue ADD COLUMN claimed_until TEXT;
CREATE INDEX idx_extraction_queue_lease ON extraction_queue (claimed_until);
