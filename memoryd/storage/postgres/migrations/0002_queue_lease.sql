-- Extraction jobs carry a lease (see the SQLite migration 0007): several servers share
-- the queue, and a job whose server died is claimed by another once its lease ran out.
ALTER TABLE extraction_queue ADD COLUMN claimed_by TEXT;
ALTER TABLE extraction_queue ADD COLUMN claimed_until TEXT;
CREATE INDEX idx_extraction_queue_lease ON extraction_queue (claimed_until);
